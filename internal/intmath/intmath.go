// Package intmath holds the integer arithmetic that package pace and
// redislimit share.
package intmath

// CeilDiv returns ⌈a/b⌉ for a >= 0 and b > 0.
func CeilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
