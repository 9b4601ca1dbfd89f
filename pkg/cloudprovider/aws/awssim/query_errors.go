package awssim

import (
	"bytes"
	"encoding/xml"
)

// escape makes s safe as XML character data.
func escape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
