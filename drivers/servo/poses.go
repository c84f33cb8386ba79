package servo

// Joints DefaultPoses looks for. A larger pan angle looks left, a larger
// tilt angle looks up (mount or calibrate the servos so).
const (
	Pan  = "pan"
	Tilt = "tilt"
)

// DefaultPoses are the head's stock gestures over the joints named "pan"
// and "tilt", where present:
//
//   - nod: tilt down, up, down, up, back to center (needs tilt)
//   - shake: pan left, right, left, right, back to center (needs pan)
//   - look_left, look_right (pan), look_up, look_down (tilt): 80% of the
//     way from center to the limit, and stay
//   - center: every joint to its Center
//
// A pose never names a joint that is not in joints. Gestures swing by at
// most 20° (nod) or 30° (shake), less where the limits are closer.
func DefaultPoses(joints []Joint) map[string]Pose {
	out := map[string]Pose{}
	var pan, tilt *Joint
	center := map[string]float64{}
	for i := range joints {
		j := &joints[i]
		center[j.Name] = j.Center
		switch j.Name {
		case Pan:
			pan = j
		case Tilt:
			tilt = j
		}
	}
	if len(center) > 0 {
		out["center"] = Pose{{Angles: center}}
	}
	if tilt != nil {
		up, down := towards(tilt, 0.8)
		out["look_up"] = Pose{{Angles: map[string]float64{Tilt: up}}}
		out["look_down"] = Pose{{Angles: map[string]float64{Tilt: down}}}
		hi, lo := swing(tilt, 20)
		out["nod"] = Pose{
			{Angles: map[string]float64{Tilt: lo}},
			{Angles: map[string]float64{Tilt: hi}},
			{Angles: map[string]float64{Tilt: lo}},
			{Angles: map[string]float64{Tilt: hi}},
			{Angles: map[string]float64{Tilt: tilt.Center}},
		}
	}
	if pan != nil {
		left, right := towards(pan, 0.8)
		out["look_left"] = Pose{{Angles: map[string]float64{Pan: left}}}
		out["look_right"] = Pose{{Angles: map[string]float64{Pan: right}}}
		l, r := swing(pan, 30)
		out["shake"] = Pose{
			{Angles: map[string]float64{Pan: l}},
			{Angles: map[string]float64{Pan: r}},
			{Angles: map[string]float64{Pan: l}},
			{Angles: map[string]float64{Pan: r}},
			{Angles: map[string]float64{Pan: pan.Center}},
		}
	}
	return out
}

// towards is frac of the way from Center to Max, and to Min.
func towards(j *Joint, frac float64) (hi, lo float64) {
	return j.Center + frac*(j.Max-j.Center), j.Center - frac*(j.Center-j.Min)
}

// swing is Center ± at most amp degrees, half the way to each limit at
// most.
func swing(j *Joint, amp float64) (hi, lo float64) {
	return j.Center + min(amp, (j.Max-j.Center)/2), j.Center - min(amp, (j.Center-j.Min)/2)
}
