package pace

import (
	"strconv"
	"strings"

	"github.com/pacehttp/pace/internal/httptoken"
)

// sfKind is the type of an RFC 9651 (Structured Field Values) bare item.
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
)

// sfParam is one parameter of a structured-field item: key and bare value.
type sfParam struct {
	key string
	sfValue
}

// sfValue is a bare item. num holds an Integer, Date or Boolean (0 or 1);
// str holds a String, Token, Byte Sequence (still base64) or Decimal's text.
type sfValue struct {
	kind sfKind
	num  int64
	str  string
}

// sfItem is a List member: a bare item and its parameters, in field order.
type sfItem struct {
	sfValue
	params []sfParam
}

// parseSFList parses field lines as one RFC 9651 List of Items (§4.2.1;
// lines are combined with commas, §4.2). Inner lists, Display Strings and
// any syntax error make the whole field invalid (ok == false). It
// implements exactly what the RateLimit fields need and is strict like the
// RFC's parsing algorithm, which says to fail the field on any error.
func parseSFList(lines []string) (items []sfItem, ok bool) {
	s := strings.Join(lines, ",")
	p := sfParser{s: strings.TrimLeft(s, " ")}
	if strings.TrimRight(p.s, " ") == "" {
		return nil, false // an empty List is "not present"
	}
	p.s = strings.TrimRight(p.s, " ")
	for {
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		items = append(items, it)
		p.skipOWS()
		if p.done() {
			return items, true
		}
		if !p.consume(',') {
			return nil, false
		}
		p.skipOWS()
		if p.done() {
			return nil, false // trailing comma
		}
	}
}

// sfParser is a cursor over a structured field value.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) consume(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) skipOWS() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) item() (sfItem, bool) {
	v, ok := p.bareItem()
	if !ok {
		return sfItem{}, false
	}
	it := sfItem{sfValue: v}
	for p.consume(';') {
		for p.consume(' ') {
		}
		key, ok := p.key()
		if !ok {
			return sfItem{}, false
		}
		val := sfValue{kind: sfBoolean, num: 1} // a bare key means true
		if p.consume('=') {
			if val, ok = p.bareItem(); !ok {
				return sfItem{}, false
			}
		}
		it.params = append(it.params, sfParam{key: key, sfValue: val})
	}
	return it, true
}

func (p *sfParser) key() (string, bool) {
	start := p.i
	if c := p.peek(); !(('a' <= c && c <= 'z') || c == '*') {
		return "", false
	}
	for !p.done() {
		c := p.s[p.i]
		if !(('a' <= c && c <= 'z') || isDigit(c) || strings.IndexByte("_-.*", c) >= 0) {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

func (p *sfParser) bareItem() (sfValue, bool) {
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return p.sfString()
	case c == '*' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		start := p.i
		p.i++
		for !p.done() && (isTokenChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfValue{kind: sfToken, str: p.s[start:p.i]}, true
	case c == ':':
		p.i++
		start := p.i
		for !p.done() && p.s[p.i] != ':' {
			if !isBase64Char(p.s[p.i]) {
				return sfValue{}, false
			}
			p.i++
		}
		if !p.consume(':') {
			return sfValue{}, false
		}
		return sfValue{kind: sfBytes, str: p.s[start : p.i-1]}, true
	case c == '?':
		p.i++
		switch {
		case p.consume('0'):
			return sfValue{kind: sfBoolean, num: 0}, true
		case p.consume('1'):
			return sfValue{kind: sfBoolean, num: 1}, true
		}
		return sfValue{}, false
	case c == '@':
		p.i++
		v, ok := p.number()
		if !ok || v.kind != sfInteger {
			return sfValue{}, false
		}
		return sfValue{kind: sfDate, num: v.num}, true
	}
	return sfValue{}, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fractional digits), RFC 9651 §4.2.4.
func (p *sfParser) number() (sfValue, bool) {
	start := p.i
	p.consume('-')
	digits := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	intDigits := p.i - digits
	if intDigits == 0 {
		return sfValue{}, false
	}
	if !p.consume('.') {
		if intDigits > 15 {
			return sfValue{}, false
		}
		n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		return sfValue{kind: sfInteger, num: n}, err == nil
	}
	fracStart := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	if intDigits > 12 || p.i == fracStart || p.i-fracStart > 3 {
		return sfValue{}, false
	}
	return sfValue{kind: sfDecimal, str: p.s[start:p.i]}, true
}

func (p *sfParser) sfString() (sfValue, bool) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return sfValue{}, false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return sfValue{kind: sfString, str: b.String()}, true
		case c < 0x20 || c > 0x7e:
			return sfValue{}, false
		default:
			b.WriteByte(c)
		}
	}
	return sfValue{}, false // no closing quote
}

// isTokenChar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool { return httptoken.Char(c) }

func isBase64Char(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || isDigit(c) ||
		c == '+' || c == '/' || c == '='
}
