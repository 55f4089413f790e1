package bench

import (
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
)

// machineBusy is the CPU time the whole machine's CPUs were not idle, or
// were taken by the hypervisor; 0 when unreadable.
func machineBusy() time.Duration {
	m, _ := osfacts.ReadMachineCPU()
	return m.Busy + m.Steal
}

// pidCPU is the CPU time (user and system) of process pid, or 0 when pid
// is 0 or unreadable (there is no process 0).
func pidCPU(pid int) time.Duration {
	d, _ := osfacts.ProcessCPU(pid)
	return d
}
