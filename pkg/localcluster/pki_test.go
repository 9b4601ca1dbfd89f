package localcluster

import (
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestPKIChainsIdentitiesAndUsages(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := newPKI(now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.CA.Cert)
	if !p.CA.Cert.IsCA {
		t.Error("CA certificate is not a CA")
	}

	tests := map[string]struct {
		kp        *keyPair
		usage     x509.ExtKeyUsage
		wantCN    string
		wantOrgs  []string
		wantNames []string
		wantIPs   []string
	}{
		"api server serves loopback and the kubernetes service": {
			kp: p.APIServer, usage: x509.ExtKeyUsageServerAuth, wantCN: "kube-apiserver",
			wantNames: []string{"localhost", "kubernetes.default.svc"},
			wantIPs:   []string{"127.0.0.1", kubernetesServiceIP},
		},
		"admin is in system:masters": {kp: p.Admin, usage: x509.ExtKeyUsageClientAuth, wantCN: adminUser, wantOrgs: []string{"system:masters"}},
		"scheduler uses its RBAC identity": {
			kp: p.Scheduler, usage: x509.ExtKeyUsageClientAuth, wantCN: "system:kube-scheduler",
		},
		"controller-manager uses its RBAC identity": {
			kp: p.ControllerManager, usage: x509.ExtKeyUsageClientAuth, wantCN: "system:kube-controller-manager",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := tc.kp.Cert
			opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}, CurrentTime: now.Add(time.Hour)}
			if tc.usage == x509.ExtKeyUsageServerAuth {
				opts.DNSName = "127.0.0.1"
			}
			if _, err := c.Verify(opts); err != nil {
				t.Fatalf("certificate does not verify against the CA: %v", err)
			}
			if c.Subject.CommonName != tc.wantCN {
				t.Errorf("CN = %q, want %q", c.Subject.CommonName, tc.wantCN)
			}
			if !slices.Equal(c.Subject.Organization, tc.wantOrgs) {
				t.Errorf("O = %v, want %v", c.Subject.Organization, tc.wantOrgs)
			}
			for _, n := range tc.wantNames {
				if !slices.Contains(c.DNSNames, n) {
					t.Errorf("DNS names %v lack %s", c.DNSNames, n)
				}
			}
			for _, ip := range tc.wantIPs {
				if !slices.ContainsFunc(c.IPAddresses, func(got net.IP) bool { return got.Equal(net.ParseIP(ip)) }) {
					t.Errorf("IPs %v lack %s", c.IPAddresses, ip)
				}
			}
			if tc.usage == x509.ExtKeyUsageClientAuth && slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
				t.Error("client certificate may also serve")
			}
		})
	}
	if len(p.ServiceAccountKeyPEM) == 0 || len(p.ServiceAccountPubPEM) == 0 {
		t.Error("service-account key pair missing")
	}
}

func TestRenderKubeconfigLoadsWithClientGo(t *testing.T) {
	p, err := newPKI(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := renderKubeconfig("https://127.0.0.1:6443", p.CA.CertPEM, adminUser, p.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatalf("client-go cannot load the kubeconfig: %v", err)
	}
	if cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("host = %q", cfg.Host)
	}
	if string(cfg.CAData) != string(p.CA.CertPEM) || string(cfg.CertData) != string(p.Admin.CertPEM) || string(cfg.KeyData) != string(p.Admin.KeyPEM) {
		t.Error("kubeconfig does not embed the CA and the admin pair")
	}
}
