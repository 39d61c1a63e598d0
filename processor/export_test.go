package processor

// What the external tests (package processor_test) share with the
// internal ones.

// SeriesTasks is seriesTasks, for the runtime tests.
var SeriesTasks = seriesTasks
