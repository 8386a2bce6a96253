package gen

// town is a place USGS names event locations after: "12 km NNE of Town,
// Region".
type town struct {
	name     string
	lat, lon float64
}

// network is a seismic network of the ANSS that reports small events near
// its towns, above the magnitude it detects completely.
type network struct {
	net        string
	region     string // the place name's suffix: "CA", "Alaska", ...
	offshore   string // the region name for events far from every town, if any
	towns      []town
	weight     int     // share of the small events
	complete   float64 // magnitude of completeness
	decimals   int     // magnitude decimals as the network reports them
	magType    string
	spreadKm   float64 // how far from a town events fall
	depth      [2]float64
	depthDecim int
}

// The regional networks, their towns at their real coordinates.
var networks = []network{
	{net: "ci", region: "CA", weight: 20, complete: 0.6, decimals: 2, magType: "ml", spreadKm: 25, depth: [2]float64{1, 16}, depthDecim: 2, towns: []town{
		{"Ridgecrest", 35.6225, -117.6709}, {"Aguanga", 33.4428, -116.8647}, {"Anza", 33.5550, -116.6736},
		{"Borrego Springs", 33.2559, -116.3750}, {"Ocotillo Wells", 33.1442, -116.1336}, {"Indio", 33.7206, -116.2156},
		{"Searles Valley", 35.7669, -117.4045}, {"Calipatria", 33.1256, -115.5142}, {"Brawley", 32.9787, -115.5303},
		{"Lake Elsinore", 33.6681, -117.3273}, {"Ojai", 34.4480, -119.2429}, {"Coso Junction", 36.0436, -117.9487},
	}},
	{net: "nc", region: "CA", weight: 16, complete: 0.7, decimals: 2, magType: "md", spreadKm: 12, depth: [2]float64{0.5, 12}, depthDecim: 2, towns: []town{
		{"The Geysers", 38.7757, -122.7561}, {"Cobb", 38.8224, -122.7233}, {"Anderson Springs", 38.7710, -122.6872},
		{"Pinnacles", 36.5358, -121.1480}, {"Parkfield", 35.8997, -120.4327}, {"Petrolia", 40.3254, -124.2873},
		{"Ferndale", 40.5762, -124.2639}, {"Hollister", 36.8525, -121.4016}, {"Gilroy", 37.0058, -121.5683},
		{"Mammoth Lakes", 37.6485, -118.9721},
	}},
	{net: "ak", region: "Alaska", weight: 24, complete: 1.0, decimals: 1, magType: "ml", spreadKm: 60, depth: [2]float64{0, 140}, depthDecim: 1, towns: []town{
		{"Karluk", 57.5700, -154.4556}, {"Anchorage", 61.2181, -149.9003}, {"Willow", 61.7472, -150.0375},
		{"Talkeetna", 62.3239, -150.1094}, {"Petersville", 62.4997, -150.7697}, {"Cantwell", 63.3917, -148.9506},
		{"Valdez", 61.1308, -146.3483}, {"Fairbanks", 64.8378, -147.7164}, {"Sutton-Alpine", 61.7778, -148.8944},
		{"Pedro Bay", 59.7894, -154.1250}, {"Cohoe", 60.3686, -151.3064},
	}},
	{net: "hv", region: "Hawaii", weight: 12, complete: 1.4, decimals: 2, magType: "ml", spreadKm: 12, depth: [2]float64{0, 40}, depthDecim: 2, towns: []town{
		{"Pāhala", 19.2028, -155.4786}, {"Volcano", 19.4422, -155.2342}, {"Fern Forest", 19.4644, -155.1272},
		{"Leilani Estates", 19.4697, -154.9175}, {"Honaunau-Napoopoo", 19.4561, -155.8839},
	}},
	{net: "nn", region: "Nevada", weight: 6, complete: 0.7, decimals: 2, magType: "ml", spreadKm: 30, depth: [2]float64{0, 15}, depthDecim: 1, towns: []town{
		{"Gabbs", 38.8688, -117.9229}, {"Dayton", 39.2371, -119.5929}, {"Mina", 38.3910, -118.1087},
		{"Silver Springs", 39.4155, -119.2246}, {"Yerington", 38.9858, -119.1629},
	}},
	{net: "uw", region: "Washington", weight: 6, complete: 0.4, decimals: 2, magType: "ml", spreadKm: 15, depth: [2]float64{0, 25}, depthDecim: 1, towns: []town{
		{"Mount St. Helens", 46.2000, -122.1900}, {"Maple Valley", 47.3926, -122.0462}, {"Port Townsend", 48.1170, -122.7604},
		{"Ashford", 46.7590, -122.0329}, {"Entiat", 47.6757, -120.2081},
	}},
	{net: "pr", region: "Puerto Rico", offshore: "Puerto Rico region", weight: 6, complete: 2.0, decimals: 2, magType: "md", spreadKm: 60, depth: [2]float64{5, 30}, depthDecim: 1, towns: []town{
		{"Maria Antonia", 17.9783, -66.8887}, {"Guánica", 17.9716, -66.9080}, {"Tallaboa", 18.0053, -66.7146},
	}},
	{net: "ok", region: "Oklahoma", weight: 3, complete: 1.2, decimals: 1, magType: "ml", spreadKm: 15, depth: [2]float64{2, 8}, depthDecim: 1, towns: []town{
		{"Perry", 36.2898, -97.2881}, {"Guthrie", 35.8789, -97.4253}, {"Prague", 35.4873, -96.6850}, {"Medford", 36.8070, -97.7337},
	}},
	{net: "tx", region: "Texas", weight: 5, complete: 1.4, decimals: 1, magType: "ml", spreadKm: 30, depth: [2]float64{3, 9}, depthDecim: 1, towns: []town{
		{"Toyah", 31.3132, -103.7930}, {"Pecos", 31.4229, -103.4932}, {"Mentone", 31.7048, -103.5985}, {"Stanton", 32.1293, -101.7885},
	}},
	{net: "uu", region: "Utah", weight: 2, complete: 0.8, decimals: 2, magType: "md", spreadKm: 20, depth: [2]float64{2, 12}, depthDecim: 2, towns: []town{
		{"Magna", 40.7091, -112.1016}, {"Beaver", 38.2769, -112.6411},
	}},
	{net: "mb", region: "Montana", weight: 2, complete: 0.8, decimals: 2, magType: "ml", spreadKm: 20, depth: [2]float64{2, 14}, depthDecim: 2, towns: []town{
		{"West Yellowstone", 44.6621, -111.1041}, {"Lincoln", 46.9549, -112.6817},
	}},
}

// zone is a region of the world the USGS reports moderate and large
// events in: near its towns, or far from any under its own name (the
// Flinn-Engdahl region).
type zone struct {
	region   string
	towns    []town
	remote   string     // when set, events fall around center and take this name
	center   [2]float64 // lat, lon of a remote zone
	spreadKm float64
	depth    [2]float64
	deep     float64 // share of intermediate and deep events
	weight   int
}

// The zones of the world's M4+ seismicity, weighted roughly by how much of
// it they produce.
var zones = []zone{
	{region: "Indonesia", weight: 16, spreadKm: 180, depth: [2]float64{10, 180}, deep: 0.2, towns: []town{
		{"Tual", -5.6400, 132.7500}, {"Ambon", -3.6954, 128.1814}, {"Bitung", 1.4404, 125.1217},
		{"Sinabang", 2.4803, 96.3801}, {"Bengkulu", -3.8004, 102.2655}, {"Kupang", -10.1772, 123.6070},
		{"Abepura", -2.6000, 140.6833}, {"Tobelo", 1.7284, 128.0095}, {"Sorong", -0.8762, 131.2558},
		{"Labuan Bajo", -8.4964, 119.8877},
	}},
	{region: "Japan", weight: 10, spreadKm: 150, depth: [2]float64{10, 100}, deep: 0.15, towns: []town{
		{"Miyako", 39.6414, 141.9570}, {"Iwaki", 37.0505, 140.8877}, {"Hachinohe", 40.5122, 141.4883},
		{"Kushiro", 42.9849, 144.3820}, {"Nemuro", 43.3301, 145.5828}, {"Ishigaki", 24.3448, 124.1572},
	}},
	{region: "Taiwan", weight: 3, spreadKm: 60, depth: [2]float64{5, 60}, towns: []town{
		{"Hualien City", 23.9769, 121.6044}, {"Yilan", 24.7570, 121.7530},
	}},
	{region: "Philippines", weight: 8, spreadKm: 120, depth: [2]float64{10, 120}, deep: 0.1, towns: []town{
		{"Sarangani", 5.4033, 125.4636}, {"Hinatuan", 8.3658, 126.3350}, {"Davao", 7.0731, 125.6128},
		{"Pondaguitan", 6.3594, 126.1758}, {"Burias", 5.7167, 125.2833},
	}},
	{region: "Papua New Guinea", weight: 9, spreadKm: 150, depth: [2]float64{10, 120}, deep: 0.15, towns: []town{
		{"Kokopo", -4.3520, 152.2633}, {"Kimbe", -5.5502, 150.1429}, {"Lae", -6.7221, 146.9847},
		{"Kandrian", -6.2167, 149.5500}, {"Wewak", -3.5535, 143.6268}, {"Arawa", -6.2132, 155.5367},
	}},
	{region: "Vanuatu", weight: 6, spreadKm: 120, depth: [2]float64{10, 150}, deep: 0.2, towns: []town{
		{"Port-Vila", -17.7333, 168.3273}, {"Isangel", -19.5417, 169.2722}, {"Sola", -13.8764, 167.5517},
		{"Luganville", -15.5333, 167.1667},
	}},
	{region: "Solomon Islands", weight: 3, spreadKm: 120, depth: [2]float64{10, 80}, towns: []town{
		{"Kirakira", -10.4544, 161.9205}, {"Lata", -10.7380, 165.8567},
	}},
	{region: "Tonga", weight: 6, spreadKm: 180, depth: [2]float64{10, 250}, deep: 0.3, towns: []town{
		{"Neiafu", -18.6496, -173.9833}, {"Pangai", -19.8128, -174.3497}, {"Hihifo", -15.9521, -173.7849},
	}},
	{remote: "Fiji region", center: [2]float64{-17.8, -178.3}, weight: 4, spreadKm: 200, depth: [2]float64{400, 640}, deep: 1},
	{remote: "south of the Fiji Islands", center: [2]float64{-24.0, -179.6}, weight: 3, spreadKm: 150, depth: [2]float64{400, 600}, deep: 1},
	{remote: "Kermadec Islands region", center: [2]float64{-29.5, -177.4}, weight: 4, spreadKm: 200, depth: [2]float64{10, 60}},
	{region: "New Zealand", weight: 2, spreadKm: 80, depth: [2]float64{10, 60}, towns: []town{
		{"Te Araroa", -37.6333, 178.3667}, {"Seddon", -41.6667, 174.0667},
	}},
	{region: "Chile", weight: 9, spreadKm: 120, depth: [2]float64{10, 120}, deep: 0.2, towns: []town{
		{"Calama", -22.4624, -68.9272}, {"Iquique", -20.2133, -70.1503}, {"Antofagasta", -23.6509, -70.3975},
		{"La Serena", -29.9027, -71.2519}, {"Ovalle", -30.6015, -71.2003}, {"Constitución", -35.3333, -72.4167},
		{"Tocopilla", -22.0920, -70.1979},
	}},
	{region: "Peru", weight: 4, spreadKm: 120, depth: [2]float64{15, 150}, deep: 0.2, towns: []town{
		{"Acarí", -15.4311, -74.6158}, {"Chala", -15.8564, -74.2453}, {"Tarata", -17.4736, -70.0322},
	}},
	{region: "Argentina", weight: 2, spreadKm: 80, depth: [2]float64{150, 250}, deep: 1, towns: []town{
		{"San Antonio de los Cobres", -24.2110, -66.3190},
	}},
	{region: "Mexico", weight: 6, spreadKm: 100, depth: [2]float64{10, 90}, towns: []town{
		{"Pinotepa Nacional", 16.3408, -98.0536}, {"Salina Cruz", 16.1667, -95.2000}, {"Tres Picos", 15.8706, -93.5325},
		{"Acapulco", 16.8634, -99.8901},
	}},
	{region: "Guatemala", weight: 2, spreadKm: 80, depth: [2]float64{20, 90}, towns: []town{{"Champerico", 14.2931, -91.9139}}},
	{region: "El Salvador", weight: 2, spreadKm: 80, depth: [2]float64{20, 80}, towns: []town{{"Acajutla", 13.5928, -89.8275}}},
	{region: "Alaska", weight: 8, spreadKm: 150, depth: [2]float64{10, 80}, deep: 0.15, towns: []town{
		{"Adak", 51.8800, -176.6581}, {"Atka", 52.1961, -174.2006}, {"Nikolski", 52.9381, -168.8678},
		{"Sand Point", 55.3397, -160.4972},
	}},
	{region: "Greece", weight: 3, spreadKm: 80, depth: [2]float64{5, 40}, towns: []town{
		{"Karpathos", 35.5069, 27.2131}, {"Methoni", 36.8197, 21.7049},
	}},
	{region: "Iran", weight: 2, spreadKm: 80, depth: [2]float64{10, 30}, towns: []town{{"Bandar Abbas", 27.1832, 56.2666}}},
	{region: "Afghanistan", weight: 2, spreadKm: 50, depth: [2]float64{180, 230}, deep: 1, towns: []town{{"Jurm", 36.8644, 70.8339}}},
	{remote: "central Mid-Atlantic Ridge", center: [2]float64{0.9, -27.5}, weight: 2, spreadKm: 300, depth: [2]float64{10, 10}},
	{remote: "northern Mid-Atlantic Ridge", center: [2]float64{29.8, -42.5}, weight: 1, spreadKm: 300, depth: [2]float64{10, 10}},
	{remote: "Southwest Indian Ridge", center: [2]float64{-41.5, 43.0}, weight: 1, spreadKm: 300, depth: [2]float64{10, 10}},
	{remote: "Mid-Indian Ridge", center: [2]float64{-18.5, 66.0}, weight: 1, spreadKm: 300, depth: [2]float64{10, 10}},
	{remote: "southern East Pacific Rise", center: [2]float64{-31.0, -111.8}, weight: 1, spreadKm: 300, depth: [2]float64{10, 10}},
	{remote: "South Sandwich Islands region", center: [2]float64{-58.3, -25.8}, weight: 2, spreadKm: 200, depth: [2]float64{10, 120}},
	{remote: "Macquarie Island region", center: [2]float64{-55.8, 158.6}, weight: 1, spreadKm: 200, depth: [2]float64{10, 10}},
}
