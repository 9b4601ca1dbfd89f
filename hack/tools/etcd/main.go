// Command etcd is etcd's server entry point built from the pinned
// go.etcd.io/etcd/server/v3 module, so that the local control plane needs no
// prebuilt download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
