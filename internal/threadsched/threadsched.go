// Package threadsched applies a setting to every thread of this process: the
// Go runtime's threads are not the program's to name, and some settings
// (CPU affinity, scheduling policy) are per thread in Linux. A thread
// inherits both from the thread that creates it, so a setting made on every
// thread at one moment also reaches the threads the runtime starts later.
package threadsched
