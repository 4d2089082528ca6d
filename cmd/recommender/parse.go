package main

import "errors"

// ParseCmd is the `infscale parse` subcommand (placeholder until implemented).
type ParseCmd struct{}

// Run executes the subcommand.
func (c *ParseCmd) Run(e *env) error { return errors.New("parse: not implemented yet") }
