// Package geo holds the little spherical geometry the recorded data sets
// need: distances between places, and the direction from one to another.
package geo

import "math"

// EarthRadiusKm is the mean radius of the Earth.
const EarthRadiusKm = 6371.0

func radians(d float64) float64 { return d * math.Pi / 180 }
func degrees(r float64) float64 { return r * 180 / math.Pi }

// DistanceKm is the great-circle distance in kilometres between two points
// given in degrees (the haversine formula).
func DistanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	dLat, dLon := radians(lat2-lat1), radians(lon2-lon1)
	a := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(radians(lat1))*math.Cos(radians(lat2))*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadiusKm * math.Asin(math.Min(1, math.Sqrt(a)))
}

// Bearing is the initial bearing, in degrees clockwise from north, from the
// first point to the second.
func Bearing(lat1, lon1, lat2, lon2 float64) float64 {
	φ1, φ2, Δλ := radians(lat1), radians(lat2), radians(lon2-lon1)
	y := math.Sin(Δλ) * math.Cos(φ2)
	x := math.Cos(φ1)*math.Sin(φ2) - math.Sin(φ1)*math.Cos(φ2)*math.Cos(Δλ)
	return math.Mod(degrees(math.Atan2(y, x))+360, 360)
}

// Destination is the point km kilometres from a start along a bearing.
func Destination(lat, lon, bearing, km float64) (float64, float64) {
	δ, θ, φ1, λ1 := km/EarthRadiusKm, radians(bearing), radians(lat), radians(lon)
	φ2 := math.Asin(math.Sin(φ1)*math.Cos(δ) + math.Cos(φ1)*math.Sin(δ)*math.Cos(θ))
	λ2 := λ1 + math.Atan2(math.Sin(θ)*math.Sin(δ)*math.Cos(φ1), math.Cos(δ)-math.Sin(φ1)*math.Sin(φ2))
	return degrees(φ2), math.Mod(degrees(λ2)+540, 360) - 180
}
