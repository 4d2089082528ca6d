// Package seasonal finds the predictable part of a fleet's traffic: the
// arrival rate by hour of day and day of week, how much of the hourly
// variance that profile explains, and a schedule floor (minimum replicas
// per hour) to raise the reactive policy's minimum before the load comes.
//
// Reading guide: profile.go (Build: hourly means, the separable model
// rate ≈ day factor × hour shape and its R²; it profiles any per-step
// series, the replicas a replay held too), floor.go (Floor: replicas per
// hour of week from a per-replica rate, kept only where it recurs
// on MinDays days or in MinWeeks weeks; Windows: runs of equal
// floors merged across days into cron windows; DSTDays: where KEDA's cron
// trigger for a window and serve's schedule hold it apart around a DST
// change), render.go (the config's
// `schedule:` YAML, KEDA cron triggers, and the replay's schedule= options).
package seasonal
