// Package httptoken is the token syntax of HTTP (RFC 9110 §5.6.2), the
// syntax of a field name (§5.1) and of structured-field tokens: one
// definition for package pace and package middleware.
package httptoken

import "strings"

// Char reports whether c is a tchar: a letter, a digit or one of
// !#$%&'*+-.^_`|~.
func Char(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Valid reports whether s is a token: one or more tchars. A header field
// name must be one; "a b", "X-Key:" and a name holding a newline are not.
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !Char(s[i]) {
			return false
		}
	}
	return true
}
