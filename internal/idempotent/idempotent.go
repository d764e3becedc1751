// Package idempotent holds the rules of which requests are safe to send
// twice, shared by the root Transport's retries and package batch's
// requeues and write-ahead journal.
package idempotent

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/pacehttp/pace/internal/hdr"
)

// Method reports whether m is idempotent per RFC 9110 §9.2.2: GET, HEAD,
// OPTIONS, TRACE, PUT and DELETE ("" means GET in net/http). Method names
// are case-sensitive (RFC 9110 §9.1).
func Method(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// WantsKey reports whether a request of method m needs an idempotency key
// to be safe to send twice, and so gets one when keys are added: POST and
// PATCH.
func WantsKey(m string) bool { return m == http.MethodPost || m == http.MethodPatch }

// Key returns the idempotency key h carries under name, a canonical header
// name; "" means hdr.IdempotencyKey, and then hdr.XIdempotencyKey counts
// too, as in net/http. ok reports whether the header counts: it has a
// non-empty first value, or it is present with a nil value (net/http's way
// to mark a request idempotent without sending the header). key is the
// first value, "" for a nil one.
func Key(h http.Header, name string) (key string, ok bool) {
	if name != "" {
		return first(h, name)
	}
	if key, ok = first(h, hdr.IdempotencyKey); key != "" {
		return key, true
	}
	if k, xok := first(h, hdr.XIdempotencyKey); xok {
		return k, true
	}
	return "", ok
}

func first(h http.Header, name string) (string, bool) {
	vs, present := h[name]
	switch {
	case !present:
		return "", false
	case vs == nil:
		return "", true
	case len(vs) > 0 && vs[0] != "":
		return vs[0], true
	}
	return "", false
}

// Derived returns the idempotency key of item id in scope:
//
//	"pace-" + scope + "-" + the first 24 hex digits of SHA-256(scope + "\x00" + id)
//
// Package batch's scope is its run ID; package asynqpace's is "asynq",
// with the queue and task ID as id.
func Derived(scope, id string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + id))
	return "pace-" + scope + "-" + hex.EncodeToString(sum[:12])
}

// Ensure gives req the key derive returns when its method wants one
// ([WantsKey]) and it carries none. A header present with an empty
// value opts out: Ensure removes it and adds none. When derive returns
// "", Ensure adds none either. It returns the key req then carries, "" for
// none. req.Header may be nil.
func Ensure(req *http.Request, derive func() string) string {
	key, _ := Key(req.Header, "")
	if vs, ok := req.Header[hdr.IdempotencyKey]; ok && key == "" && len(vs) > 0 {
		delete(req.Header, hdr.IdempotencyKey) // opted out
	} else if key == "" && WantsKey(req.Method) {
		if key = derive(); key == "" {
			return ""
		}
		if req.Header == nil {
			req.Header = make(http.Header)
		}
		req.Header.Set(hdr.IdempotencyKey, key)
	}
	return key
}
