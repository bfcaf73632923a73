//go:build !full

package main

import "github.com/headroom-sim/headroom/sim"

// The slim build has no charts: a command line with --plot-dir runs the
// full build instead (see fullbuild.go), so these are not reached.

func writePlotFiles(string, any) error { return errNotInSlimBuild }

type runCharts struct{}

func newRunCharts() *runCharts { return &runCharts{} }

func (*runCharts) Request(sim.RequestSample) {}
func (*runCharts) Token(float64, float64)    {}

func (*runCharts) write(string, *sim.Report) error { return errNotInSlimBuild }

func writeAccuracyPlot(string, []closedLoopTable) error { return errNotInSlimBuild }
