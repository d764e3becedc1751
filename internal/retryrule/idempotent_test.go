package retryrule

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIdempotentMethod(t *testing.T) {
	for m, want := range map[string]bool{
		"": true, "GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true,
		"POST": false, "PATCH": false, "CONNECT": false, "get": false, // RFC 9110 §9.1: case-sensitive
	} {
		assert.Equal(t, want, IdempotentMethod(m), "IdempotentMethod(%q)", m)
	}
	assert.True(t, WantsKey(http.MethodPost))
	assert.True(t, WantsKey(http.MethodPatch))
	assert.False(t, WantsKey(http.MethodPut))
	assert.False(t, WantsKey(""))
}

func TestIdempotencyKey(t *testing.T) {
	tests := []struct {
		name    string
		h       http.Header
		header  string
		wantKey string
		wantOK  bool
	}{
		{"none", http.Header{}, "", "", false},
		{"nil header", nil, "", "", false},
		{"Idempotency-Key", http.Header{"Idempotency-Key": {"k1"}}, "", "k1", true},
		{"X-Idempotency-Key", http.Header{"X-Idempotency-Key": {"k2"}}, "", "k2", true},
		{"both: the standard name wins", http.Header{"Idempotency-Key": {"k1"}, "X-Idempotency-Key": {"k2"}}, "", "k1", true},
		{"empty value does not count", http.Header{"Idempotency-Key": {""}}, "", "", false},
		{"empty value, X- counts", http.Header{"Idempotency-Key": {""}, "X-Idempotency-Key": {"k2"}}, "", "k2", true},
		{"nil value counts, no key", http.Header{"Idempotency-Key": nil}, "", "", true},
		{"own header", http.Header{"Request-Id": {"r"}}, "Request-Id", "r", true},
		{"own header: the default names do not count", http.Header{"Idempotency-Key": {"k1"}}, "Request-Id", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := IdempotencyKey(tt.h, tt.header)
			assert.Equal(t, tt.wantKey, key)
			assert.Equal(t, tt.wantOK, ok)
		})
	}
}

// TestDerived: the key is stable for one scope and id, differs between
// them, and never lets a separator in id stand in for the scope.
func TestDerivedKey(t *testing.T) {
	k := DerivedKey("asynq", "default\x00task-1")
	assert.Equal(t, k, DerivedKey("asynq", "default\x00task-1"))
	assert.Regexp(t, `^pace-asynq-[0-9a-f]{24}$`, k)
	assert.NotEqual(t, k, DerivedKey("asynq", "default\x00task-2"))
	assert.NotEqual(t, k, DerivedKey("asynq", "other\x00task-1"))
	assert.NotEqual(t, DerivedKey("a", "b\x00c"), DerivedKey("a\x00b", "c"))
}

// TestEnsure: a POST or PATCH without a key gets one, a key already there
// is kept, an empty header opts out, and other methods get none.
func TestEnsureKey(t *testing.T) {
	derive := func() string { return "derived" }
	for _, tc := range []struct {
		method string
		h      http.Header
		want   string
		sent   []string
	}{
		{"POST", nil, "derived", []string{"derived"}},
		{"PATCH", http.Header{}, "derived", []string{"derived"}},
		{"POST", http.Header{"Idempotency-Key": {"mine"}}, "mine", []string{"mine"}},
		{"POST", http.Header{"X-Idempotency-Key": {"mine"}}, "mine", nil},
		{"POST", http.Header{"Idempotency-Key": {""}}, "", nil},
		{"GET", nil, "", nil},
		{"PUT", http.Header{}, "", nil},
	} {
		req := &http.Request{Method: tc.method, Header: tc.h}
		assert.Equal(t, tc.want, EnsureKey(req, derive), "%s %v", tc.method, tc.h)
		assert.Equal(t, tc.sent, req.Header["Idempotency-Key"], "%s %v", tc.method, tc.h)
	}
}
