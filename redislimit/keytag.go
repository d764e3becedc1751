package redislimit

import (
	"crypto/sha256"
	"encoding/base64"
)

// maxPlainKey is the longest key that names its state in Redis as it is.
const maxPlainKey = 128

// hashedMark starts the tag of every key stored by its hash. No plain
// key starts with it, so a plain tag never equals a hashed one.
const hashedMark = '#'

// hashedTagLen is the length of a hashed tag: the mark and 32 base64url
// characters, 192 bits of SHA-256.
const hashedTagLen = 1 + 32

// keyTag returns the hash tag that names key's state in Redis. The Redis
// keys of key are prefix + "{" + tag + "}:" + suffix, so they share one
// Cluster slot. A plain key is its own tag. It is 1 to maxPlainKey bytes of
// visible ASCII ('!' to '~'). It has no '{' or '}', which would move the
// hash tag, and does not start with hashedMark. Any other key is tagged
// "#" and 32 base64url characters of its SHA-256 (192 bits), whatever its
// length. That covers keys empty, long, with braces, spaces, control bytes
// or non-ASCII. Distinct keys get distinct tags, up to a SHA-256
// collision.
func keyTag(key string) string {
	if plainKey(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	b := make([]byte, hashedTagLen)
	b[0] = hashedMark
	base64.RawURLEncoding.Encode(b[1:], sum[:24])
	return string(b)
}

// plainKey reports whether key is its own tag (see keyTag).
func plainKey(key string) bool {
	if key == "" || len(key) > maxPlainKey || key[0] == hashedMark {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < '!' || c > '~' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}
