// Package test holds the object builders tests share:
// MakePod(name).Requests("cpu", "1").Obj(), MakeNodePool, MakeNodeClaim,
// MakeNode, MakeDaemonSet, MakeKWOKNodeClass, MakePersistentVolumeClaim and
// MakePersistentVolume. Each starts from the values the API server would
// default, has one setter per field a test needs and Obj() returning a deep
// copy; a setter can set a zero value, as nothing is merged in behind the
// test's back. DistinctConcurrently checks a burst
// of creates hands out distinct IDs.
//
// It is imported only by tests. Its subpackages start what the integration
// tier needs (environment: etcd and kube-apiserver; controllertest: a manager
// and cluster state per test) and find the fixtures every tier reads
// (fixtures).
package test
