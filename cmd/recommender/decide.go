package main

import "errors"

// DecideCmd is the `infscale decide` subcommand (placeholder until implemented).
type DecideCmd struct{}

// Run executes the subcommand.
func (c *DecideCmd) Run(e *env) error { return errors.New("decide: not implemented yet") }
