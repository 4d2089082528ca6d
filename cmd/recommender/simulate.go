package main

import "errors"

// SimulateCmd is the `infscale simulate` subcommand (placeholder until implemented).
type SimulateCmd struct{}

// Run executes the subcommand.
func (c *SimulateCmd) Run(e *env) error { return errors.New("simulate: not implemented yet") }
