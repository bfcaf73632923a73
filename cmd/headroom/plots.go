package main

import "fmt"

// writePlotFiles renders the plots of a result into dir.
func writePlotFiles(dir string, v any) error {
	return fmt.Errorf("--plot-dir: plots are not available in this build")
}
