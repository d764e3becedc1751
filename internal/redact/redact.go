// Package redact keeps credentials that ride in URLs out of logs and
// files. It cuts the user information (RFC 3986 §3.2.1, "user:password@").
// It cuts the query (RFC 3986 §3.4), where APIs put keys and tokens
// (?api_key=, ?access_token=, a pre-signed URL's signature). On demand it
// cuts the path (RFC 3986 §3.3), where some APIs put them: the Telegram Bot
// API's /bot<token>/, webhook and capability URLs. It is the one rule that
// package pace's Logger and package batch's journal share.
package redact

import (
	"net/url"
	"strings"
)

// hiddenPath stands for a path that hidePath keeps out.
const hiddenPath = "/[redacted]"

// URL returns u as scheme://host/path: without its user information, its
// query and its fragment. With hidePath, a path other than "" and "/" is
// shown as "/[redacted]". A URL with no host (a relative or opaque one) is
// shown as its path alone.
func URL(u *url.URL, hidePath bool) string {
	if u == nil {
		return ""
	}
	p := u.EscapedPath()
	if hidePath && p != "" && p != "/" {
		p = hiddenPath
	}
	if u.Host == "" {
		return p
	}
	return u.Scheme + "://" + u.Host + p
}

// urlString returns s, a URL as a *url.Error holds it, redacted as URL
// does, or "[redacted URL]" when it does not parse.
func urlString(s string, hidePath bool) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[redacted URL]"
	}
	return URL(u, hidePath)
}

// ErrorText returns err's text with the URL of every [*url.Error] in its
// tree (through Unwrap() error and Unwrap() []error) redacted as URL does:
// net/http's client errors read `Get "https://user:***@host/p?api_key=…":
// …`. It returns "" for a nil err.
func ErrorText(err error, hidePath bool) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	for _, u := range urlErrors(err, nil) {
		if u.URL != "" {
			text = strings.ReplaceAll(text, u.URL, urlString(u.URL, hidePath))
		}
	}
	return text
}

// Error returns err with its URL redacted as URL does, when err is a
// [*url.Error]. The result is a copy: Op and Err are kept, so errors.Is and
// errors.As see what they saw. Otherwise it returns err itself. err's tree
// may hold another *url.Error (a Base that wraps an http.Client, inside a
// pace.AttemptsError). The text of the result is then ErrorText's, with
// every such URL redacted. Unwrapping it gives the copy.
func Error(err error, hidePath bool) error {
	u, ok := err.(*url.Error)
	if !ok {
		return err
	}
	c := *u
	c.URL = urlString(u.URL, hidePath)
	if text := ErrorText(err, hidePath); text != c.Error() {
		return &textError{text: text, err: &c}
	}
	return &c
}

// textError is an error whose text was redacted; it unwraps to the error
// it stands for.
type textError struct {
	text string
	err  error
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.err }

// urlErrors appends the *url.Error values in err's tree to found, at most a
// few dozen. An error tree is small, and the bound keeps a cyclic or huge
// one from costing much.
func urlErrors(err error, found []*url.Error) []*url.Error {
	const maxVisit = 64
	stack := []error{err}
	for n := 0; len(stack) > 0 && n < maxVisit; n++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if u, ok := e.(*url.Error); ok {
			found = append(found, u)
		}
		switch w := e.(type) {
		case interface{ Unwrap() error }:
			if next := w.Unwrap(); next != nil {
				stack = append(stack, next)
			}
		case interface{ Unwrap() []error }:
			for _, next := range w.Unwrap() {
				if next != nil {
					stack = append(stack, next)
				}
			}
		}
	}
	return found
}
