package harness

import (
	"slices"
	"testing"
)

func TestSplitCPUs(t *testing.T) {
	for _, tc := range []struct {
		cpus  []int
		gen   []int
		nodes string
	}{
		{[]int{0, 1}, []int{0}, "1"},
		{[]int{0, 1, 2}, []int{0}, "1,2"},
		{[]int{0, 1, 2, 3}, []int{0}, "1,2,3"},
		{[]int{2, 3, 5, 7, 8, 9, 10, 11}, []int{2, 3}, "5,7,8,9,10,11"},
	} {
		gen, nodes := splitCPUs(tc.cpus)
		if !slices.Equal(gen, tc.gen) || nodes != tc.nodes {
			t.Errorf("splitCPUs(%v) = %v, %q; want %v, %q", tc.cpus, gen, nodes, tc.gen, tc.nodes)
		}
	}
}
