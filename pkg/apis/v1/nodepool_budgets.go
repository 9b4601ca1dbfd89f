package v1

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// GetAllowedDisruptionsByReason returns how many of the pool's numNodes
// nodes may be disrupted at now for reason: the minimum over the budgets
// that match the reason (a budget without reasons matches all). Inactive
// budgets do not limit (math.MaxInt32). A budget whose schedule cannot be
// parsed allows nothing, and its error is returned alongside.
func (in *NodePool) GetAllowedDisruptionsByReason(now time.Time, numNodes int, reason DisruptionReason) (int, error) {
	allowed := math.MaxInt32
	var errs []error
	for i := range in.Spec.Disruption.Budgets {
		budget := &in.Spec.Disruption.Budgets[i]
		n, err := budget.GetAllowedDisruptions(now, numNodes)
		if err != nil {
			errs = append(errs, fmt.Errorf("budget %d: %w", i, err))
		}
		if len(budget.Reasons) == 0 || slices.Contains(budget.Reasons, reason) {
			allowed = min(allowed, n)
		}
	}
	return allowed, errors.Join(errs...)
}

// GetAllowedDisruptions returns how many of numNodes nodes this budget lets
// karp disrupt at now: math.MaxInt32 when inactive, the node count or the
// percentage of numNodes rounded up when active, and 0 with an error when
// the budget cannot be evaluated.
func (in *Budget) GetAllowedDisruptions(now time.Time, numNodes int) (int, error) {
	active, err := in.IsActive(now)
	if err != nil {
		return 0, err
	}
	if !active {
		return math.MaxInt32, nil
	}
	value := intstr.FromString(in.Nodes)
	if !strings.HasSuffix(in.Nodes, "%") {
		n, err := strconv.Atoi(in.Nodes)
		if err != nil {
			return 0, fmt.Errorf("parsing nodes %q: %w", in.Nodes, err)
		}
		value = intstr.FromInt32(int32(min(n, math.MaxInt32)))
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(&value, numNodes, true)
	if err != nil {
		return 0, fmt.Errorf("parsing nodes %q: %w", in.Nodes, err)
	}
	return allowed, nil
}

// IsActive reports whether the budget applies at now. A budget without a
// schedule is always active; otherwise it is active from each schedule hit
// (evaluated in UTC) for Duration.
func (in *Budget) IsActive(now time.Time) (bool, error) {
	if in.Schedule == nil && in.Duration == nil {
		return true, nil
	}
	if in.Schedule == nil || in.Duration == nil {
		return false, fmt.Errorf("schedule and duration must be set together")
	}
	schedule, err := parseSchedule(*in.Schedule)
	if err != nil {
		return false, err
	}
	// The window containing now started at the first hit after now-duration.
	next := schedule.Next(now.Add(-in.Duration.Duration))
	return !next.After(now), nil
}

// NextChange is the first instant after t at which IsActive may change:
// the next schedule hit (a window opens) or the end of the first window
// still open after t. ok is false for a budget without a schedule, which
// never changes.
func (in *Budget) NextChange(t time.Time) (time.Time, bool, error) {
	if in.Schedule == nil || in.Duration == nil {
		return time.Time{}, false, nil
	}
	schedule, err := parseSchedule(*in.Schedule)
	if err != nil {
		return time.Time{}, false, err
	}
	opens := schedule.Next(t)
	closes := schedule.Next(t.Add(-in.Duration.Duration)).Add(in.Duration.Duration)
	if opens.IsZero() {
		return closes, true, nil
	}
	if closes.After(t) && closes.Before(opens) {
		return closes, true, nil
	}
	return opens, true, nil
}

// parseSchedule parses a budget's cron schedule, evaluated in UTC.
func parseSchedule(schedule string) (cron.Schedule, error) {
	parsed, err := cron.ParseStandard("TZ=UTC " + schedule)
	if err != nil {
		return nil, fmt.Errorf("parsing schedule %q: %w", schedule, err)
	}
	return parsed, nil
}

// ValidateBudgets checks what the CRD schema lets through but budgets
// cannot be evaluated with: a schedule that matches the schema's
// five-field pattern yet is no cron expression (a minute of 61, a sixth
// field, a time zone prefix), or a node count too large for an integer.
// Such a budget allows no disruptions for its reasons
// (GetAllowedDisruptions), so the error names each one by index.
func (in *NodePool) ValidateBudgets() error {
	var errs []error
	for i := range in.Spec.Disruption.Budgets {
		budget := &in.Spec.Disruption.Budgets[i]
		if budget.Schedule != nil {
			if _, err := parseSchedule(*budget.Schedule); err != nil {
				errs = append(errs, fmt.Errorf("budgets[%d]: %w", i, err))
			}
		}
		if !strings.HasSuffix(budget.Nodes, "%") {
			if _, err := strconv.Atoi(budget.Nodes); err != nil {
				errs = append(errs, fmt.Errorf("budgets[%d]: parsing nodes %q: %w", i, budget.Nodes, err))
			}
		}
	}
	return errors.Join(errs...)
}
