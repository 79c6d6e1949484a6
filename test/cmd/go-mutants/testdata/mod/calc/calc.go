// Package calc holds one of each operator go-mutants rewrites, in the
// contexts that decide how: typed and untyped operands, nil, a named bool,
// a type of another package, a type parameter, a constant in an array
// length, a loop's post statement and a string concatenation.
package calc

import (
	"strings"
	"time"
)

type verdict bool

const limit = 3 * 2 // a constant declaration: no test covers it

// Clamp keeps n within [lo, hi].
func Clamp(n, lo, hi int) int {
	if n < lo {
		return lo
	}
	if n > hi {
		return hi
	}
	return n
}

// Sum adds the first n values, stepping by one.
func Sum(values []int, n int) int {
	total := 0
	for i := 0; i < n && i < len(values); i++ {
		total += values[i]
	}
	return total
}

// Empty: a nil slice, which only nil may be compared with.
func Empty(s []string) bool { return s == nil || len(s) == 0 }

// Late: a type of another package and a named bool.
func Late(d time.Duration) verdict { return verdict(d > 2*time.Second) }

// Negate is a unary minus.
func Negate(n int) int { return -n }

// Max is generic: its operands are of a type parameter.
func Max[T int | float64](a, b T) T {
	if a >= b {
		return a
	}
	return b
}

// Buffer's length is a constant expression, built alone.
func Buffer() int {
	var b [limit - 2]byte
	return len(b)
}

// Greet concatenates: changing + to - does not compile.
func Greet(name string) string { return "hello, " + strings.ToUpper(name) }

// Half divides and keeps the remainder apart.
func Half(n int) (int, int) { return n / 2, n % 2 }

// Count steps up to n: i-- in place of i++ never gets there.
func Count(n int) int {
	steps := 0
	for i := 0; i != n; i++ {
		steps++
	}
	return steps
}
