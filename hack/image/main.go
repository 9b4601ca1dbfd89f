// Command image writes the karp-controller container image as an OCI image
// layout, without a container daemon: one layer holding the static binary
// at /karp-controller, /etc/passwd and /etc/group naming the nonroot user
// (65532), a CA bundle for TLS to cloud APIs, /tmp and the user's home.
// There is no shell or any other program in the image.
//
// The image is reproducible: every file has a fixed owner and the
// SOURCE_DATE_EPOCH modification time (default 0), the tar and gzip
// streams are written in a fixed order with fixed headers, and the config
// carries the same timestamp, so the same binary and CA bundle give the
// same digest. hack/image.sh builds the binary (CGO_ENABLED=0, -trimpath,
// no build ID or VCS stamp) and runs this command; `make image` runs that.
//
// Usage:
//
//	go run ./hack/image --binary bin/image/karp-controller-linux-amd64 \
//	  --out bin/image/karp-controller --name ghcr.io/karp-autoscaler/karp-controller --tag 0.1.0
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "", "The static karp-controller binary to put at /karp-controller.")
	flag.StringVar(&o.Out, "out", "", "The OCI image layout directory to write (replaced).")
	flag.StringVar(&o.Name, "name", "", "The image repository, e.g. ghcr.io/karp-autoscaler/karp-controller.")
	flag.StringVar(&o.Tag, "tag", "", "The image tag, e.g. the chart's appVersion.")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "The binary's architecture (GOARCH).")
	flag.StringVar(&o.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "The PEM CA bundle installed at /etc/ssl/certs/ca-certificates.crt; empty leaves it out.")
	flag.Parse()
	epoch, err := sourceDateEpoch()
	if err == nil {
		o.Created = epoch
		var digest string
		digest, err = Write(o)
		if err == nil {
			fmt.Printf("%s:%s@%s written to %s\n", o.Name, o.Tag, digest, o.Out)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "image: %v\n", err)
	os.Exit(1)
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (seconds), else the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", v)
	}
	return time.Unix(secs, 0).UTC(), nil
}
