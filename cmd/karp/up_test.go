package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseUpFlags(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args      []string
		want      upOptions
		wantError bool
	}{
		"repeatable apply, relative paths made absolute": {
			args: []string{"--dir", "c", "--bin-dir", "b", "--apply", "x.yaml", "--apply", "dir", "--timeout", "90s", "--detach"},
			want: upOptions{
				dir: filepath.Join(wd, "c"), binDir: filepath.Join(wd, "b"),
				apply:   []string{filepath.Join(wd, "x.yaml"), filepath.Join(wd, "dir")},
				timeout: 90 * time.Second, detach: true,
			},
		},
		"stray argument": {args: []string{"--dir", "c", "extra"}, wantError: true},
		"unknown flag":   {args: []string{"--nope"}, wantError: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseUpFlags(tc.args, io.Discard)
			if tc.wantError {
				if err == nil {
					t.Fatalf("want an error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(upOptions{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
