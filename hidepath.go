package pace

import (
	"net/url"

	"github.com/pacehttp/pace/internal/redact"
)

// withoutPath returns err with the URL of the [*url.Error] it holds (err
// itself, or the Err of an [*AttemptsError] that err is) cut to
// scheme://host/[redacted], as Transport.HidePath asks: a Base that wraps
// an http.Client returns such errors. Any other err is returned as it is.
// It changes a copy, never err, and the copy's Op and Err are kept, so
// errors.Is and errors.As see what they saw.
func withoutPath(err error) error {
	switch e := err.(type) {
	case *url.Error:
		return redact.Error(e, true)
	case *AttemptsError:
		if w := withoutPath(e.Err); w != e.Err {
			a := *e
			a.Err = w
			return &a
		}
	}
	return err
}
