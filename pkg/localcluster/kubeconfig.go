package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// KubeconfigFor writes a kubeconfig for a new client identity, user in
// group system:masters (full rights, like the admin's), signed by the
// cluster's CA, and returns its path (<dir>/<user>.kubeconfig). Clients
// given distinct users tell apart in the API server's audit log (see
// KARP_APISERVER_AUDIT), for example two replicas of a controller.
func (c *Cluster) KubeconfigFor(user string) (string, error) {
	if user == "" || strings.ContainsAny(user, `/\`) {
		return "", fmt.Errorf("invalid user name %q for a kubeconfig", user)
	}
	ca, err := loadKeyPair(c.layout.pkiDir(), caName)
	if err != nil {
		return "", err
	}
	kp, err := ca.issue(certSpec{CommonName: user, Organization: []string{mastersGroup}, Client: true}, c.opts.Clock.Now())
	if err != nil {
		return "", err
	}
	raw, err := renderKubeconfig("https://"+hostPort(c.Ports.APIServer), ca.CertPEM, user, kp)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, user+".kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
