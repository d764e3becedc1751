package redact

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxHostKeyText is the longest host key shown as it is: a 253-byte DNS
// name (RFC 1035 §2.3.4, RFC 1123 §2.1) and a port. A longer one is no
// host a request can reach, and is fingerprinted like any other key.
const MaxHostKeyText = 253 + len(":65535")

// KeyText renders a limiter key for people: the one rule for how pace
// shows a key. A key derived from a request's host (host true) is shown as
// it is (shown true), when it is at most MaxHostKeyText bytes. Any other
// key was chosen by the caller and may be a credential, such as an API
// key. It is shown as a fingerprint: "key~" and the first 12 hexadecimal
// digits of its SHA-256, stable across runs and processes. Either way the
// text is bounded.
func KeyText(key string, host bool) (text string, shown bool) {
	if host && len(key) <= MaxHostKeyText {
		return key, true
	}
	sum := sha256.Sum256([]byte(key))
	return "key~" + hex.EncodeToString(sum[:6]), false
}
