package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func Us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func FmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", Ms(d))
	default:
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
}

// Cell writes a table cell: v in format when ok, a dash otherwise.
func Cell(b *strings.Builder, format string, v float64, ok bool) {
	if !ok {
		b.WriteString(" – |")
		return
	}
	fmt.Fprintf(b, format, v)
}

func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func YesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// Quantile is the q-quantile of v (nearest rank); 0 for none.
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
