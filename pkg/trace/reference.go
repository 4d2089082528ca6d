package trace

// ReferenceShape is the built-in reference trace, the shape of docs/design.md's
// reference comparison (1,500 s, expected 15,552 requests, "about 15,550"):
//
//	   0 -  180 s   3 req/s                          540
//	 180 -  360 s   ramp 3 -> 30 req/s              2970
//	 360 -  708 s   30 req/s (the hold)            10440
//	 708 -  768 s   fall 30 -> 3 req/s               990
//	 768 -  960 s   3 req/s                          576
//	 960 - 1320 s   silence                            0
//	1320 - 1500 s   a trickle of 0.2 req/s            36
//	                                      total    15552
//
// The hold runs past second 690, where docs/design.md's queue policy dropped from
// 7 replicas to 3 "while traffic was still 30 req/s". Prompts are uniform
// over 192..448 tokens (mean 320: an unqueued prefill takes 0.013 s at the
// reference replica's 24,750 tokens/s) and outputs uniform over 64..448
// tokens (mean 256: 1.8 s of decoding at batch 1). docs/evaluation/REFERENCE.md says
// why these and not longer ones. Arrivals are a non-homogeneous Poisson
// process (Shape.Source), so a seed fixes the count.
var ReferenceShape = Shape{
	Pieces: []Piece{
		{Start: 0, End: 180, From: 3, To: 3},
		{Start: 180, End: 360, From: 3, To: 30},
		{Start: 360, End: 708, From: 30, To: 30},
		{Start: 708, End: 768, From: 30, To: 3},
		{Start: 768, End: 960, From: 3, To: 3},
		{Start: 1320, End: 1500, From: 0.2, To: 0.2},
	},
	Prompt: Tokens{Lo: 192, Hi: 448},
	Output: Tokens{Lo: 64, Hi: 448},
}

// Reference is the built-in reference trace with the given seed.
func Reference(seed uint64) Source { return ReferenceShape.Source("reference", seed) }
