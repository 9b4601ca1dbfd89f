package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestMakeImage runs hack/image.sh (what `make image` runs) into a fresh
// directory and inspects the result: a binary built the reproducible way,
// an image that is the same when written again from it, an entrypoint
// that is the static binary, the nonroot user, and nothing else to
// execute in the image (no shell).
func TestMakeImage(t *testing.T) {
	img, binary := buildImage(t)

	// The binary: no cgo, trimmed paths, no VCS stamp, no build ID.
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"] != "linux" || settings["vcs.revision"] != "" {
		t.Errorf("build settings %v, want CGO_ENABLED=0, -trimpath, GOOS=linux and no VCS stamp", settings)
	}
	if id, err := exec.Command("go", "tool", "buildid", binary).Output(); err != nil || strings.TrimSpace(string(id)) != "" {
		t.Errorf("build ID %q (%v), want none", id, err)
	}
	// The version and commit it reports (karpenter_build_info, --version):
	// the chart's appVersion and the checked-out commit.
	wantName := chartDefaultImage(t)
	repository, tag := wantName[:strings.LastIndex(wantName, ":")], wantName[strings.LastIndex(wantName, ":")+1:]
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	// The image is built for the host's architecture (no GOARCH given), so
	// its binary runs here.
	if img.config.Architecture != runtime.GOARCH {
		t.Fatalf("image built for %s, want the host's %s to run its binary", img.config.Architecture, runtime.GOARCH)
	}
	out, err := exec.Command(binary, "--version").Output()
	want := fmt.Sprintf("karp-controller %s (commit %s,", tag, strings.TrimSpace(string(head)))
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("--version printed %q (%v), want it to start with %q", out, err, want)
	}
	// The layout: written again from the same binary, byte for byte the same.
	again := filepath.Join(t.TempDir(), "again")
	digest, err := Write(Options{Binary: binary, Out: again, Name: repository, Tag: tag, Arch: img.config.Architecture,
		CABundle: "/etc/ssl/certs/ca-certificates.crt", Created: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if digest != img.digest {
		t.Fatalf("writing the image again from the same binary gave %s, first %s; the image is not reproducible", digest, img.digest)
	}

	if got := img.desc.Annotations["io.containerd.image.name"]; got != wantName {
		t.Errorf("image name %q, want the chart's default image %q", got, wantName)
	}
	cfg := img.config
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", cfg.Config.User)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/karp-controller" {
		t.Errorf("Entrypoint = %q, want [/karp-controller]", cfg.Config.Entrypoint)
	}
	if cfg.Created != "1970-01-01T00:00:00Z" {
		t.Errorf("created = %q, want the fixed SOURCE_DATE_EPOCH 0", cfg.Created)
	}

	files := img.files
	bin, ok := files["karp-controller"]
	if !ok {
		t.Fatalf("no /karp-controller in the layer; files: %v", names(files))
	}
	if bin.hdr.Mode&0o111 == 0 || bin.hdr.Uid != 0 {
		t.Errorf("/karp-controller mode %o uid %d, want executable and root-owned (not writable by the nonroot user)", bin.hdr.Mode, bin.hdr.Uid)
	}
	exe, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("/karp-controller is not an ELF binary: %v", err)
	}
	for _, p := range exe.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/karp-controller is dynamically linked; the image has no loader")
		}
	}
	// The only executable file is the controller: no shell, no busybox.
	for name, f := range files {
		if f.hdr.Typeflag == tar.TypeReg && f.hdr.Mode&0o111 != 0 && name != "karp-controller" {
			t.Errorf("executable %s in the image", name)
		}
		if strings.HasPrefix(name, "bin/") || strings.HasSuffix(name, "/sh") {
			t.Errorf("%s in the image", name)
		}
		if !f.hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s modified at %s, want the fixed epoch", name, f.hdr.ModTime)
		}
	}
	if passwd := string(files["etc/passwd"].data); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, want the nonroot user 65532", passwd)
	}
	if f, ok := files["tmp/"]; !ok || f.hdr.Mode&0o1777 != 0o1777 {
		t.Error("no world-writable sticky /tmp")
	}
}

type layerFile struct {
	hdr  *tar.Header
	data []byte
}

type builtImage struct {
	digest string
	desc   Descriptor
	config ImageConfig
	files  map[string]layerFile
}

// buildImage runs hack/image.sh into a temporary bin directory and reads
// the layout back; it returns the image and the binary it holds.
func buildImage(t *testing.T) (builtImage, string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "image.sh"))
	cmd.Env = append(os.Environ(), "KARP_BIN_DIR="+binDir, "SOURCE_DATE_EPOCH=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	layout := filepath.Join(binDir, "image", "karp-controller")

	var index Index
	readJSON(t, filepath.Join(layout, "index.json"), &index)
	if len(index.Manifests) != 1 || index.Manifests[0].MediaType != MediaTypeManifest {
		t.Fatalf("index.json manifests = %+v, want one image manifest", index.Manifests)
	}
	img := builtImage{desc: index.Manifests[0], digest: index.Manifests[0].Digest, files: map[string]layerFile{}}
	var manifest Manifest
	readJSON(t, blobPath(t, layout, img.desc), &manifest)
	readJSON(t, blobPath(t, layout, manifest.Config), &img.config)
	if len(manifest.Layers) != 1 || len(img.config.RootFS.DiffIDs) != 1 {
		t.Fatalf("%d layers, %d diff IDs; want one", len(manifest.Layers), len(img.config.RootFS.DiffIDs))
	}
	gz, err := os.Open(blobPath(t, layout, manifest.Layers[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != img.config.RootFS.DiffIDs[0] {
		t.Errorf("the layer's diff ID does not match its content")
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		img.files[hdr.Name] = layerFile{hdr: hdr, data: data}
	}
	return img, filepath.Join(binDir, "image", "karp-controller-linux-"+img.config.Architecture)
}

// blobPath checks the blob's size and digest and returns its path.
func blobPath(t *testing.T, layout string, d Descriptor) string {
	t.Helper()
	path := filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(d.Digest, "sha256:"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s does not match its descriptor", d.Digest)
	}
	return path
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func names(files map[string]layerFile) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	return out
}

// chartDefaultImage is repository:appVersion from charts/karp.
func chartDefaultImage(t *testing.T) string {
	t.Helper()
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Controller struct {
			Image struct {
				Repository string `json:"repository"`
			} `json:"image"`
		} `json:"controller"`
	}
	for path, into := range map[string]any{"Chart.yaml": &chart, "values.yaml": &values} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "karp", path))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	return values.Controller.Image.Repository + ":" + chart.AppVersion
}
