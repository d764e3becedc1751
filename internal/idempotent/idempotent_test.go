package idempotent

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMethod(t *testing.T) {
	for m, want := range map[string]bool{
		"": true, "GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true,
		"POST": false, "PATCH": false, "CONNECT": false, "get": false, // RFC 9110 §9.1: case-sensitive
	} {
		assert.Equal(t, want, Method(m), "Method(%q)", m)
	}
	assert.True(t, WantsKey(http.MethodPost))
	assert.True(t, WantsKey(http.MethodPatch))
	assert.False(t, WantsKey(http.MethodPut))
	assert.False(t, WantsKey(""))
}

func TestKey(t *testing.T) {
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
			key, ok := Key(tt.h, tt.header)
			assert.Equal(t, tt.wantKey, key)
			assert.Equal(t, tt.wantOK, ok)
		})
	}
}
