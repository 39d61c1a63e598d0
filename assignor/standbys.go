package assignor

// placeStandbys places num.standby.replicas standbys per task.
func (pl *placement) placeStandbys() {}
