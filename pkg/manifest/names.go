package manifest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// nameAlphabet is the alphabet Kubernetes draws generated name suffixes
// and template hashes from (no vowels, no look-alike characters).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// suffixes returns n distinct 5-character suffixes drawn from a generator
// seeded by seed, the way generateName would produce them but repeatable.
func suffixes(seed string, n int) []string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	r := rand.New(rand.NewPCG(h.Sum64(), 0x6b617270)) //nolint:gosec // names, not secrets
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for len(out) < n {
		b := make([]byte, 5)
		for i := range b {
			b[i] = nameAlphabet[r.IntN(len(nameAlphabet))]
		}
		s := string(b)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// templateHash is a pod-template-hash style value for a template: the
// 32-bit FNV-1a hash of its JSON, encoded in the name alphabet as the
// Deployment controller encodes its hash.
func templateHash(template any) string {
	data, _ := json.Marshal(template)
	h := fnv.New32a()
	_, _ = h.Write(data)
	return safeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// safeEncode maps each byte onto the name alphabet (as
// k8s.io/apimachinery's rand.SafeEncodeString does).
func safeEncode(s string) string {
	out := make([]byte, len(s))
	for i := range s {
		out[i] = nameAlphabet[int(s[i])%len(nameAlphabet)]
	}
	return string(out)
}

// uidFor derives a stable UUID-shaped UID for an object.
func uidFor(kind, namespace, name string) types.UID {
	sum := sha1.Sum([]byte(kind + "/" + namespace + "/" + name)) //nolint:gosec // identifiers, not secrets
	b := sum[:16]
	b[6] = (b[6] & 0x0f) | 0x50 // version 5 layout
	b[8] = (b[8] & 0x3f) | 0x80
	x := hex.EncodeToString(b)
	return types.UID(x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32])
}
