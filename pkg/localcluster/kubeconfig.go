package localcluster

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextName is the kubeconfig context (and cluster name) of a local
// cluster.
const ContextName = "karp-local"

// renderKubeconfig returns a kubeconfig for server trusting ca and
// authenticating with the client pair, all embedded.
func renderKubeconfig(server string, ca []byte, user string, client *keyPair) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: ca,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: client.CertPEM,
		ClientKeyData:         client.KeyPEM,
	}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: user}
	cfg.CurrentContext = ContextName
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering kubeconfig for %s: %w", user, err)
	}
	return raw, nil
}
