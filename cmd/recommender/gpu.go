package main

import "errors"

// GPUCmd is the `infscale gpu` subcommand (placeholder until implemented).
type GPUCmd struct{}

// Run executes the subcommand.
func (c *GPUCmd) Run(e *env) error { return errors.New("gpu: not implemented yet") }
