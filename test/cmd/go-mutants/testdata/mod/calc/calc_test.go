package calc

import (
	"testing"
	"time"
)

func TestClamp(t *testing.T) {
	// Only inside and above: the lower bound's boundary mutant lives.
	if Clamp(5, 0, 10) != 5 || Clamp(11, 0, 10) != 10 || Clamp(10, 0, 10) != 10 {
		t.Fatal("clamp")
	}
}

func TestSum(t *testing.T) {
	if Sum([]int{1, 2, 3}, 2) != 3 {
		t.Fatal("sum")
	}
}

func TestOthers(t *testing.T) {
	if !Empty(nil) || Empty([]string{"a"}) {
		t.Fatal("empty")
	}
	if !Late(3*time.Second) || Late(time.Second) {
		t.Fatal("late")
	}
	if Negate(2) != -2 || Max(1, 2) != 2 || Max(2.5, 1.5) != 2.5 {
		t.Fatal("negate, max")
	}
	if Buffer() != 4 {
		t.Fatal("buffer")
	}
	if Greet("x") != "hello, X" {
		t.Fatal("greet")
	}
	if Count(3) != 3 {
		t.Fatal("count")
	}
	if q, r := Half(7); q != 3 || r != 1 {
		t.Fatal("half")
	}
}
