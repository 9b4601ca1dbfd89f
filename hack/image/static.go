package main

import (
	"debug/elf"
	"fmt"
)

// checkStatic fails unless path is a Linux ELF executable without a
// program interpreter (a static binary: the image has no libc or loader).
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary (build it with GOOS=linux): %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}
