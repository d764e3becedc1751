package retrydecide

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/pacehttp/pace/retry"
)

// errClass is what a transport error says about retrying.
type errClass uint8

const (
	errFinal     errClass = iota // never retry: cancelled, permanent or unknown
	errTransient                 // retry if the request is safe to replay
	errNotSent                   // nothing reached the server: retry any method
)

// classifyError sorts a transport error from one attempt whose request had
// context ctx, using errors.Is and errors.As; only net/http errors that
// have no type are matched by text, in netHTTPErrorClass. reason names the
// kind of error for observers. In order:
//
//   - ctx done, or context.Canceled anywhere: final ("request canceled").
//   - TLS and certificate errors (tls.CertificateVerificationError, the
//     x509 error types, tls.RecordHeaderError, a TLS alert from the
//     server): final; sending again will not change a certificate.
//   - untyped net/http errors, by text (see netHTTPErrorClass).
//   - a DNS error: final when the name does not exist, not sent when the
//     lookup timed out or failed temporarily.
//   - a dial or proxy-connect failure, or connection refused: not sent.
//   - connection reset or aborted, broken pipe, ETIMEDOUT, io.EOF,
//     io.ErrUnexpectedEOF, net.ErrClosed, a net.Error timeout, or
//     context.DeadlineExceeded while ctx is still live (a Transport's own
//     timeout, not the caller's deadline): transient.
//   - anything else: final ("unknown transport error").
func classifyError(ctx context.Context, err error) (errClass, retry.Reason) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return errFinal, "request canceled"
	}
	if isTLSError(err) {
		return errFinal, "TLS or certificate error"
	}
	if class, reason, ok := netHTTPErrorClass(err); ok {
		return class, reason
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return errNotSent, "DNS lookup failed temporarily"
		}
		return errFinal, "DNS lookup failed"
	}
	var opErr *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &opErr) && (opErr.Op == "dial" || opErr.Op == "proxyconnect")) {
		return errNotSent, "connection failed"
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return errTransient, "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return errTransient, "connection closed"
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return errTransient, reasonTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return errTransient, reasonTimeout
	}
	return errFinal, "unknown transport error"
}

// reasonTimeout is classifyError's reason for a timeout of the attempt.
const reasonTimeout retry.Reason = "timeout"

// IsTimeout reports whether err, a transport error of a request with
// context ctx, is a timeout of the attempt, not of the caller's context:
// the connection it went on may be silent (see Transport.Base).
func IsTimeout(ctx context.Context, err error) bool {
	class, reason := classifyError(ctx, err)
	return class == errTransient && reason == reasonTimeout
}

// isTLSError reports whether err comes from TLS: certificate verification,
// a non-TLS reply to a TLS handshake, or an alert sent by the server.
func isTLSError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		ech       *tls.ECHRejectionError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		roots     x509.SystemRootsError
		critical  x509.UnhandledCriticalExtension
		opErr     *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &ech) || errors.As(err, &unknownCA) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &roots) || errors.As(err, &critical) ||
		(errors.As(err, &opErr) && opErr.Op == "remote error") // crypto/tls's alert from the peer
}

// netHTTPErrorClass classifies, by their text, the errors net/http (Go 1.25,
// 1.26) returns without an exported type. It is the only place pace matches
// error text. ok is false when err is none of them.
//
//   - "unsupported protocol scheme", "no Host in request URL", "nil
//     Request.URL": an invalid request, final.
//   - "stopped after N redirects": http.Client's redirect limit; a
//     RoundTripper should not see it, and it is final if it does.
//   - "http: ContentLength=N with Body length M": the request's declared
//     length is wrong, final.
//   - "net/http: request canceled": the request was cancelled, final.
//   - "http2: server sent GOAWAY", "Server's graceful shutdown GOAWAY",
//     "http2: client connection lost", "server closed idle connection",
//     "HTTP/1.x transport connection broken": the connection went away,
//     transient.
func netHTTPErrorClass(err error) (class errClass, reason retry.Reason, ok bool) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unsupported protocol scheme"),
		strings.Contains(msg, "no Host in request URL"),
		strings.Contains(msg, "nil Request.URL"):
		return errFinal, "invalid request URL", true
	case strings.Contains(msg, "stopped after") && strings.Contains(msg, "redirects"):
		return errFinal, "too many redirects", true
	case strings.Contains(msg, "http: ContentLength="):
		return errFinal, "request body length mismatch", true
	case strings.Contains(msg, "net/http: request canceled"):
		return errFinal, "request canceled", true
	case strings.Contains(msg, "server sent GOAWAY"),
		strings.Contains(msg, "graceful shutdown GOAWAY"):
		return errTransient, "HTTP/2 GOAWAY", true
	case strings.Contains(msg, "http2: client connection lost"),
		strings.Contains(msg, "server closed idle connection"),
		strings.Contains(msg, "HTTP/1.x transport connection broken"):
		return errTransient, "connection closed", true
	}
	return errFinal, "", false
}

// classOf classifies a transport error of a request with context ctx.
func classOf(ctx context.Context, err error) errClass {
	class, _ := classifyError(ctx, err)
	return class
}
