package userdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// boundary separates the parts of the archives karp writes.
	boundary = "//"

	contentTypeShellScript = `text/x-shellscript; charset="us-ascii"`
	contentTypeNodeConfig  = "application/node.eks.aws"
	contentTypeMultipart   = `multipart/mixed; boundary="` + boundary + `"`
)

// part is one entry of a MIME multi-part archive.
type part struct {
	contentType string
	content     string
}

// isMIME reports whether user data is already a MIME document.
func isMIME(userData string) bool {
	trimmed := strings.TrimSpace(userData)
	return strings.HasPrefix(trimmed, "MIME-Version:") || strings.HasPrefix(trimmed, "Content-Type:")
}

// parseMIME splits a MIME multi-part document into its parts.
func parseMIME(userData string) ([]part, error) {
	msg, err := mail.ReadMessage(strings.NewReader(userData))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("reading MIME Content-Type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME user data is %s, not multipart", mediaType)
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	var parts []part
	for {
		p, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		parts = append(parts, part{contentType: p.Header.Get("Content-Type"), content: string(content)})
	}
}

// userParts turns the user's user data into archive parts: a MIME document
// is split, YAML or JSON objects become a NodeConfig part (nodeadm reads
// them) and anything else a shell script part.
func userParts(userData *string, yamlIsNodeConfig bool) ([]part, error) {
	if userData == nil || strings.TrimSpace(*userData) == "" {
		return nil, nil
	}
	if isMIME(*userData) {
		return parseMIME(*userData)
	}
	contentType := contentTypeShellScript
	if yamlIsNodeConfig && yaml.Unmarshal([]byte(*userData), &map[string]interface{}{}) == nil {
		contentType = contentTypeNodeConfig
	}
	return []part{{contentType: contentType, content: *userData}}, nil
}

// serializeMIME writes parts as one MIME multi-part archive with the "//"
// boundary and without carriage returns (cloud-init and nodeadm accept
// bare newlines; it keeps the output byte-stable).
func serializeMIME(parts []part) (string, error) {
	var buf bytes.Buffer
	buf.WriteString("MIME-Version: 1.0\n")
	buf.WriteString("Content-Type: " + contentTypeMultipart + "\n\n")
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return "", err
	}
	for _, p := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": []string{p.contentType}})
		if err != nil {
			return "", fmt.Errorf("writing MIME part: %w", err)
		}
		if _, err := io.WriteString(pw, p.content); err != nil {
			return "", fmt.Errorf("writing MIME part: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("closing MIME archive: %w", err)
	}
	return strings.ReplaceAll(buf.String(), "\r", ""), nil
}
