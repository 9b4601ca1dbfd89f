package scale

import "testing"

func TestDownToKeepsTheFraction(t *testing.T) {
	for _, c := range []struct {
		replicas []int
		want     int
	}{
		{[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 3},
		{[]int{12, 1, 2, 1, 1, 3}, 6},
		{[]int{37}, 11},
	} {
		got := downTo(c.replicas, 0.3)
		sum := 0
		for i, r := range got {
			if r > c.replicas[i] || r < int(0.3*float64(c.replicas[i])) {
				t.Errorf("%v: workload %d gets %d of %d", c.replicas, i, r, c.replicas[i])
			}
			sum += r
		}
		if sum != c.want {
			t.Errorf("%v: %v sums to %d, want %d", c.replicas, got, sum, c.want)
		}
	}
}
