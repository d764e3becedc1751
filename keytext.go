package pace

import "github.com/pacehttp/pace/internal/redact"

// maxHostKeyText is the longest host key shown as it is (see
// redact.MaxHostKeyText).
const maxHostKeyText = redact.MaxHostKeyText

// keyText renders a limiter key for people, in the Transport's log records
// and in the text of a [*WaitError] (so of an [*AttemptsError] holding
// one), by redact.KeyText's rule. A key the Transport derived from the
// request's host (host true: Transport.Key is nil or returned "") is shown
// as it is. Any other key was chosen by the caller (Transport.Key, a
// Keyed's, middleware's or redislimit's key) and may be a credential, so
// it is shown as a fingerprint.
func keyText(key string, host bool) (text string, shown bool) { return redact.KeyText(key, host) }

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
