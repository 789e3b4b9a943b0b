//go:build race

package sandbox

// raceBuild: the race detector's runtime reads /proc/self/exe when the
// launcher starts, so a race-built launcher gets a /proc (Landlock still
// denies the program any read of it).
const raceBuild = true
