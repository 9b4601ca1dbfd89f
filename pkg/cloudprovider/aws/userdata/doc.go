// Package userdata renders the EC2 user data that joins an instance to the
// cluster, per AMI family:
//
//   - AL2023: a nodeadm NodeConfig in a MIME multi-part archive, after the
//     user's own parts (nodeadm merges later documents over earlier ones,
//     so karp's cluster settings win);
//   - Bottlerocket: TOML settings, the user's TOML with karp's
//     settings.kubernetes keys written over it;
//   - AL2: /etc/eks/bootstrap.sh in a MIME archive after the user's parts;
//   - Windows2019/2022/2025: the EKS bootstrap PowerShell script;
//   - Custom: the user's user data, unchanged.
//
// Render is pure: it takes everything as Options (cluster name, endpoint,
// CA bundle, service CIDR, kube-dns IP, the instance types' pod count,
// kubelet settings, labels, taints, the user's userData) and returns the
// plain text; the launch template base64-encodes it. It imports no AWS SDK
// and no Kubernetes client.
package userdata
