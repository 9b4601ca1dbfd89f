package controllers

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/options"
)

func TestDisruptionOptionsTakeTheReplacementTimeout(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want time.Duration
	}{
		"default is upstream's": {nil, 10 * time.Minute},
		"flag":                  {[]string{"--disruption-replacement-timeout=25s"}, 25 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o, err := options.Parse(fs, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := disruptionOptions(o).QueueTimeout; got != tc.want {
				t.Errorf("QueueTimeout = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDisruptionOptionsReplaceFirstUnlessTurnedOff(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want bool
	}{
		"default":  {nil, true},
		"flag off": {[]string{"--replace-first=false"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o, err := options.Parse(fs, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := disruptionOptions(o).ReplaceFirst; got != tc.want {
				t.Errorf("ReplaceFirst = %v, want %v", got, tc.want)
			}
		})
	}
}
