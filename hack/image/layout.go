package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Media types of the OCI image spec.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// The user the controller runs as, as upstream's images and the chart's
// securityContext name it.
const (
	NonRootUID  = 65532
	Entrypoint  = "/karp-controller"
	CABundleDst = "etc/ssl/certs/ca-certificates.crt"
)

// Options say what image to write.
type Options struct {
	Binary   string
	Out      string
	Name     string
	Tag      string
	Arch     string
	CABundle string
	Created  time.Time
}

// Descriptor points at a blob (OCI image spec).
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *Platform         `json:"platform,omitempty"`
}

// Platform is a descriptor's os and architecture.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Index is index.json of an OCI image layout.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ImageConfig is the part of an OCI image config the runtime reads.
type ImageConfig struct {
	Created      string        `json:"created"`
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Config       RuntimeConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []History `json:"history"`
}

// RuntimeConfig is how a container of the image runs.
type RuntimeConfig struct {
	User       string            `json:"User"`
	Entrypoint []string          `json:"Entrypoint"`
	Env        []string          `json:"Env"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// History is one step of the image's history.
type History struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// Write writes the image as an OCI layout in o.Out (replacing it) and
// returns the manifest's digest.
func Write(o Options) (string, error) {
	if o.Binary == "" || o.Out == "" || o.Name == "" || o.Tag == "" || o.Arch == "" {
		return "", errors.New("--binary, --out, --name, --tag and --arch are required")
	}
	layer, diffID, err := buildLayer(o)
	if err != nil {
		return "", err
	}
	created := o.Created.UTC().Format(time.RFC3339)
	labels := map[string]string{
		"org.opencontainers.image.title":   "karp-controller",
		"org.opencontainers.image.source":  "https://github.com/karp-autoscaler/karp",
		"org.opencontainers.image.version": o.Tag,
	}
	cfg := ImageConfig{
		Created:      created,
		Architecture: o.Arch,
		OS:           "linux",
		Config: RuntimeConfig{
			User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
			Entrypoint: []string{Entrypoint},
			Env:        []string{"SSL_CERT_FILE=/" + CABundleDst},
			WorkingDir: "/",
			Labels:     labels,
		},
		History: []History{{Created: created, CreatedBy: "make image (hack/image)"}},
	}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{diffID}
	if o.CABundle == "" {
		cfg.Config.Env = nil
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}

	if err := os.RemoveAll(o.Out); err != nil {
		return "", err
	}
	blobs := filepath.Join(o.Out, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", err
	}
	cfgDesc, err := writeBlob(blobs, MediaTypeConfig, cfgJSON)
	if err != nil {
		return "", err
	}
	layerDesc, err := writeBlob(blobs, MediaTypeLayer, layer)
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest, Config: cfgDesc, Layers: []Descriptor{layerDesc},
		Annotations: map[string]string{"org.opencontainers.image.created": created, "org.opencontainers.image.version": o.Tag},
	})
	if err != nil {
		return "", err
	}
	manifestDesc, err := writeBlob(blobs, MediaTypeManifest, manifest)
	if err != nil {
		return "", err
	}
	// ref.name is the tag (skopeo's oci:DIR:TAG); the containerd name is
	// the full reference the chart's default image names.
	manifestDesc.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": o.Tag,
		"io.containerd.image.name":          o.Name + ":" + o.Tag,
	}
	manifestDesc.Platform = &Platform{Architecture: o.Arch, OS: "linux"}
	index, err := json.Marshal(Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{manifestDesc}})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "index.json"), index, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return "", err
	}
	return manifestDesc.Digest, nil
}

func writeBlob(dir, mediaType string, data []byte) (Descriptor, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, hexSum), data, 0o644); err != nil {
		return Descriptor{}, err
	}
	return Descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}, nil
}

// entry is one file or directory of the layer.
type entry struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
}

// buildLayer returns the gzipped layer and the digest of its uncompressed
// tar (the config's diff ID).
func buildLayer(o Options) ([]byte, string, error) {
	binary, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, "", fmt.Errorf("reading the binary: %w", err)
	}
	if err := checkStatic(o.Binary); err != nil {
		return nil, "", err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootUID)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
	}
	if o.CABundle != "" {
		bundle, err := os.ReadFile(o.CABundle)
		if err != nil {
			return nil, "", fmt.Errorf("reading the CA bundle (--ca-bundle, empty to leave it out): %w", err)
		}
		entries = append(entries,
			entry{name: "etc/ssl/", mode: 0o755, dir: true},
			entry{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			entry{name: CABundleDst, mode: 0o644, data: bundle})
	}
	entries = append(entries,
		entry{name: "home/", mode: 0o755, dir: true},
		entry{name: "home/nonroot/", mode: 0o700, uid: NonRootUID, dir: true},
		entry{name: "karp-controller", mode: 0o755, data: binary},
		entry{name: "tmp/", mode: 0o1777, dir: true})

	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: o.Created, Format: tar.FormatPAX,
			Typeflag: tar.TypeReg, Size: int64(len(e.data)),
		}
		if e.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	diff := sha256.Sum256(tarBuf.Bytes())

	var gzBuf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&gzBuf, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := gz.Write(tarBuf.Bytes()); err != nil {
		return nil, "", err
	}
	if err := gz.Close(); err != nil {
		return nil, "", err
	}
	return gzBuf.Bytes(), "sha256:" + hex.EncodeToString(diff[:]), nil
}
