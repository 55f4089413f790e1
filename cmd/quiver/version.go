package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/version"
)

func init() {
	register("version", "print quiver's version, commit and build date, and the DuckDB, arrow-go and Go it was built with", func() command { return &versionCmd{} })
}

type versionCmd struct{}

func (c *versionCmd) Run(_ context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("version")
	asJSON := fs.Bool("json", false, "print the version as one JSON object, as /healthz reports it")
	rest, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version takes no arguments, got %q", rest[0])
	}
	info := version.Get()
	if *asJSON {
		return json.NewEncoder(std.Out).Encode(info)
	}
	_, err = fmt.Fprintln(std.Out, info)
	return err
}
