package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long generated certificates are valid. A local
// cluster is recreated on every `karp up`, so a year is plenty.
const certValidity = 365 * 24 * time.Hour

// keyPair is a certificate with its private key, both parsed and PEM.
type keyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// certSpec describes a certificate to issue.
type certSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

// newCA creates a self-signed certificate authority.
func newCA(commonName string, now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(tmpl, tmpl, key, key)
}

// issue signs a new leaf certificate for spec with the CA.
func (ca *keyPair) issue(spec certSpec, now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %s: %w", spec.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	return sign(tmpl, ca.Cert, key, ca.Key)
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func newSerial() *big.Int {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		// crypto/rand never fails on Linux; a zero serial would still be
		// a valid (if unusual) certificate.
		return big.NewInt(1)
	}
	return n
}

// write stores the pair as <dir>/<name>.crt and <dir>/<name>.key.
func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.CertPEM, 0o644); err != nil {
		return fmt.Errorf("writing %s certificate: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), kp.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("writing %s key: %w", name, err)
	}
	return nil
}

// Identity names of the generated client certificates. The scheduler and
// controller-manager use the names their default RBAC bindings expect.
const (
	adminUser             = "karp-admin"
	mastersGroup          = "system:masters"
	schedulerUser         = "system:kube-scheduler"
	controllerManagerUser = "system:kube-controller-manager"
	kwokUser              = "karp-kwok"
)

// serviceClusterIPRange is the Service CIDR; its first address is the
// in-cluster `kubernetes` Service, which the serving certificate names.
const (
	serviceClusterIPRange = "10.0.0.0/24"
	kubernetesServiceIP   = "10.0.0.1"
)

// pki holds every credential a local cluster needs.
type pki struct {
	CA                *keyPair
	APIServer         *keyPair
	Admin             *keyPair
	Scheduler         *keyPair
	ControllerManager *keyPair
	KWOK              *keyPair
	// ServiceAccountKeyPEM signs ServiceAccount tokens; its public half
	// (ServiceAccountPubPEM) verifies them.
	ServiceAccountKeyPEM []byte
	ServiceAccountPubPEM []byte
}

// newPKI generates a fresh CA, serving and client certificates and the
// service-account key.
func newPKI(now time.Time) (*pki, error) {
	ca, err := newCA("karp-local-ca", now)
	if err != nil {
		return nil, err
	}
	p := &pki{CA: ca}
	specs := []struct {
		dst  **keyPair
		spec certSpec
	}{
		{&p.APIServer, certSpec{
			CommonName: "kube-apiserver",
			DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(kubernetesServiceIP)},
			Server:     true,
		}},
		{&p.Admin, certSpec{CommonName: adminUser, Organization: []string{mastersGroup}, Client: true}},
		{&p.Scheduler, certSpec{CommonName: schedulerUser, Client: true}},
		{&p.ControllerManager, certSpec{CommonName: controllerManagerUser, Client: true}},
		// kwok writes Node and Pod status, leases and events for fake nodes;
		// it acts with full rights, as it does in kwokctl clusters.
		{&p.KWOK, certSpec{CommonName: kwokUser, Organization: []string{mastersGroup}, Client: true}},
	}
	for _, s := range specs {
		if *s.dst, err = ca.issue(s.spec, now); err != nil {
			return nil, err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	if p.ServiceAccountKeyPEM, err = encodeKey(saKey); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}
	p.ServiceAccountPubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	return p, nil
}

// PKI file names under <dir>/pki.
const (
	caName        = "ca"
	apiServerName = "apiserver"
	saKeyFile     = "sa.key"
	saPubFile     = "sa.pub"
)

// writeTo stores the CA, the API server's pair and the service-account
// keys under dir; client pairs live embedded in their kubeconfigs.
func (p *pki) writeTo(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := p.CA.write(dir, caName); err != nil {
		return err
	}
	if err := p.APIServer.write(dir, apiServerName); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, saKeyFile), p.ServiceAccountKeyPEM, 0o600); err != nil {
		return fmt.Errorf("writing service-account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, saPubFile), p.ServiceAccountPubPEM, 0o644); err != nil {
		return fmt.Errorf("writing service-account public key: %w", err)
	}
	return nil
}

// loadKeyPair reads <dir>/<name>.crt and <dir>/<name>.key as written by
// write.
func loadKeyPair(dir, name string) (*keyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, fmt.Errorf("reading %s certificate: %w", name, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, fmt.Errorf("reading %s key: %w", name, err)
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, fmt.Errorf("%s certificate or key in %s is not PEM", name, dir)
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing %s certificate: %w", name, err)
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing %s key: %w", name, err)
	}
	return &keyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
