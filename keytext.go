package pace

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxHostKeyText is the longest host key shown as it is: a 253-byte DNS
// name (RFC 1035 §2.3.4, RFC 1123 §2.1) and a port. A longer one is no
// host a request can reach, and is fingerprinted like any other key.
const maxHostKeyText = 253 + len(":65535")

// keyText renders a limiter key for people, in the Transport's log records
// and in the text of a [*WaitError] (so of an [*AttemptsError] holding
// one): the one rule for how a key is shown. A key the Transport derived
// from the request's host (host true: Transport.Key is nil or returned "")
// is shown as it is (shown true), when it is at most maxHostKeyText bytes.
// Any other key was chosen by the caller (Transport.Key, a Keyed's,
// middleware's or redislimit's key) and may be a credential, such as an
// API key, so it is shown as a fingerprint: "key~" and the first 12
// hexadecimal digits of the key's SHA-256, stable across runs and
// processes, so that the lines of one key can still be told apart and
// matched with the caller's own records. Either way the text is bounded.
func keyText(key string, host bool) (text string, shown bool) {
	if host && len(key) <= maxHostKeyText {
		return key, true
	}
	sum := sha256.Sum256([]byte(key))
	return "key~" + hex.EncodeToString(sum[:6]), false
}

// withHostKey returns err with the [*WaitError] for key it holds (err
// itself, or the Err of an [*AttemptsError] that err is) marked as holding
// a host key, so that its text shows the key (see keyText); any other err
// is returned as it is. The Transport calls it for the errors of requests
// keyed by host. It marks a copy and never changes err, which may be a
// value that a Limiter returns to many calls at once.
func withHostKey(err error, key string) error {
	switch e := err.(type) {
	case *WaitError:
		if e.Key == key && !e.hostKey {
			w := *e
			w.hostKey = true
			return &w
		}
	case *AttemptsError:
		if w, ok := withHostKey(e.Err, key).(*WaitError); ok && w != e.Err {
			a := *e
			a.Err = w
			return &a
		}
	}
	return err
}
