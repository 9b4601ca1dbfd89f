package operator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAWSConfigHonoursACABundle: a custom CA bundle (AWS_CA_BUNDLE, as
// behind a TLS-inspecting proxy) still loads with karp's HTTP client in
// place; handing LoadDefaultConfig a non-buildable client made it fail.
func TestAWSConfigHonoursACABundle(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "proxy-ca"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

	cfg, err := loadAWSConfig(t.Context())
	if err != nil {
		t.Fatalf("loading the AWS config with AWS_CA_BUNDLE set: %v", err)
	}
	if got := fmt.Sprintf("%T", cfg.HTTPClient); !strings.Contains(got, "sdkhttp") {
		t.Errorf("HTTP client is %s, want sdkhttp's wrapper", got)
	}

	// A bundle that is not there is still the SDK's clear error.
	t.Setenv("AWS_CA_BUNDLE", filepath.Join(t.TempDir(), "missing.pem"))
	if _, err := loadAWSConfig(t.Context()); err == nil || !strings.Contains(err.Error(), "loading AWS SDK config") {
		t.Errorf("missing bundle: err = %v, want the SDK config error", err)
	}
}
