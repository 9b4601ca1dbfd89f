package interruption_test

import (
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/interruption"
)

// The replacement comes first only when half the notice holds twice the
// launch time plus slack; the NodeClaim then goes half way through it.
func TestReplaceByForNotice(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		notice, launch time.Duration
		want           time.Time
		ok             bool
	}{
		"two-minute notice, 20 s launches":    {2 * time.Minute, 20 * time.Second, now.Add(time.Minute), true},
		"two-minute notice, 25 s launches":    {2 * time.Minute, 25 * time.Second, now.Add(time.Minute), true},
		"two-minute notice, 26 s launches":    {2 * time.Minute, 26 * time.Second, time.Time{}, false},
		"nothing observed yet":                {2 * time.Minute, 0, now.Add(time.Minute), true},
		"notice nearly over":                  {15 * time.Second, 0, time.Time{}, false},
		"notice already over (late delivery)": {-time.Second, 0, time.Time{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := interruption.ReplaceByForNotice(now, now.Add(tc.notice), tc.launch)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("ReplaceByForNotice = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
