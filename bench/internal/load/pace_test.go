package load

import (
	"testing"
	"time"
)

// A fixed pacer sends the first request at once and then pauses Think; an
// exponential one pauses before the first request too, with a mean of
// Think, never above MaxThinks × Think, and differently on each connection.
func TestPacer(t *testing.T) {
	const think = 10 * time.Millisecond
	fixed := newPacer(think, PaceFixed, 0)
	if d := fixed.next(); d != 0 {
		t.Fatalf("fixed: first pause %v, want 0", d)
	}
	for range 5 {
		if d := fixed.next(); d != think {
			t.Fatalf("fixed: pause %v, want %v", d, think)
		}
	}
	if d := newPacer(0, PaceExp, 0).next(); d != 0 {
		t.Fatalf("back to back: pause %v, want 0", d)
	}
	const n = 20000
	a, b := newPacer(think, PaceExp, 1), newPacer(think, PaceExp, 2)
	var sum time.Duration
	same := 0
	for range n {
		da, db := a.next(), b.next()
		if da < 0 || da > MaxThinks*think {
			t.Fatalf("exp: pause %v outside [0, %v]", da, MaxThinks*think)
		}
		if da == db {
			same++
		}
		sum += da
	}
	if mean := sum / n; mean < think*95/100 || mean > think*105/100 {
		t.Errorf("exp: mean pause %v over %d, want %v ± 5%%", mean, n, think)
	}
	if same > n/100 {
		t.Errorf("exp: connections 1 and 2 drew the same pause %d times of %d", same, n)
	}
}

// Thirty-two connections paced in step send their first requests together
// (each with 31 others within the window); drawn apart, a median request
// has at most a few others near it.
func TestPacingSpreadsFirstSends(t *testing.T) {
	const conns = 32
	for _, tc := range []struct {
		pace           Pacing
		minP50, maxP50 float64
	}{
		{PaceFixed, conns - 1, conns - 1},
		{PaceExp, 0, 4}, // 32 draws over ~10 ms: ±250 µs holds ~1.6 on average
	} {
		var sends []int64
		for c := range conns {
			sends = append(sends, newPacer(10*time.Millisecond, tc.pace, c).next().Nanoseconds())
		}
		if p50, _ := crowdQuantiles(sends); p50 < tc.minP50 || p50 > tc.maxP50 {
			t.Errorf("%s: median crowd %v, want %v-%v", tc.pace, p50, tc.minP50, tc.maxP50)
		}
	}
}

func TestCrowd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sends []int64
		want  []int
	}{
		{"alone", []int64{0}, []int{0}},
		{"together", []int64{0, 0, 0}, []int{2, 2, 2}},
		{"edge inside", []int64{0, 250_000}, []int{1, 1}},
		{"apart", []int64{0, 250_001, 450_000}, []int{0, 1, 1}},
		{"chain", []int64{0, 200_000, 400_000}, []int{1, 2, 1}},
	} {
		got := crowd(tc.sends)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: crowd %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

func TestParsePacing(t *testing.T) {
	for s, ok := range map[string]bool{"exp": true, "fixed": true, "": false, "poisson": false} {
		if _, err := ParsePacing(s); (err == nil) != ok {
			t.Errorf("ParsePacing(%q): err %v", s, err)
		}
	}
}
