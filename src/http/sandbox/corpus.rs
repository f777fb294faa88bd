//! The sandbox's fictional corpus, generated deterministically from a seed:
//! the same seed always gives the same businesses, keys and record bytes, so
//! a republish writes new versions with the same ids and bytes.
//!
//! Every name here is invented. Each business's texts name only its own
//! brand, so the corpus passes the scope check it is published through.

use serde_json::{Value, json};
use svc_core::ads::images::Slot;
use svc_core::digest::sha256;
use svc_core::ids::RecordType;
use svc_core::rng::Rng;
use svc_core::sandbox_images;

/// Countries of the corpus, with their currency, a city and its coordinate.
pub const MARKETS: [(&str, &str, &str, &str, f64, f64); 8] = [
    ("FR", "EUR", "fr", "Lyon", 45.764, 4.8357),
    ("DE", "EUR", "de", "Leipzig", 51.3397, 12.3731),
    ("ES", "EUR", "es", "Valencia", 39.4699, -0.3763),
    ("IT", "EUR", "it", "Torino", 45.0703, 7.6869),
    ("NL", "EUR", "nl", "Utrecht", 52.0907, 5.1214),
    ("GB", "GBP", "en", "Leeds", 53.8008, -1.5491),
    ("SE", "SEK", "sv", "Malmo", 55.605, 13.0038),
    ("US", "USD", "en", "Denver", 39.7392, -104.9903),
];

const BRANDS: [&str; 24] = [
    "Lumio", "Brisa", "Korvat", "Nordel", "Vellum", "Tessera", "Quillon", "Ombra", "Faldo", "Ravik", "Solenne",
    "Mirava", "Zentro", "Pellar", "Umbrio", "Caskel", "Dorvan", "Elsmere", "Fjorda", "Galvin", "Hestra", "Ivaro",
    "Jorund", "Kelvane",
];

/// (vertical, category, nouns)
const VERTICALS: [(&str, &str, [&str; 8]); 6] = [
    ("home", "furniture", ["Table", "Chair", "Lamp", "Shelf", "Rug", "Mirror", "Stool", "Cabinet"]),
    ("fashion", "apparel", ["Jacket", "Scarf", "Sweater", "Boots", "Shirt", "Coat", "Belt", "Trousers"]),
    ("electronics", "audio", ["Speaker", "Headphones", "Radio", "Amplifier", "Earbuds", "Turntable", "Cable", "Dock"]),
    ("food", "pantry", ["Olive Oil", "Honey", "Coffee", "Tea", "Pasta", "Chocolate", "Jam", "Granola"]),
    ("sports", "outdoor", ["Tent", "Backpack", "Bottle", "Helmet", "Gloves", "Racket", "Mat", "Compass"]),
    ("beauty", "skincare", ["Cream", "Serum", "Soap", "Balm", "Cleanser", "Toner", "Mask", "Oil"]),
];

const ADJECTIVES: [&str; 16] = [
    "Oak", "Linen", "Copper", "Midnight", "Coastal", "Alpine", "Classic", "Compact", "Deluxe", "Organic", "Granite",
    "Velvet", "Amber", "Silver", "Forest", "Harbor",
];

/// One business of the corpus and everything it publishes.
#[derive(Debug, Clone)]
pub struct BusinessSpec {
    pub legal_name: String,
    pub brand: String,
    pub country: String,
    /// Countries it publishes for: its own and the next market.
    pub countries: Vec<String>,
    pub integration_seed: [u8; 32],
    pub passkey_seed: [u8; 32],
    pub products: Vec<Vec<u8>>,
    pub business_file: Vec<u8>,
    pub events: Vec<Vec<u8>>,
    pub jobs: Vec<Vec<u8>>,
    pub updates: Vec<Vec<u8>>,
    /// The sealed AI policy record, if the business has one.
    pub ai_policy: Option<Vec<u8>>,
    /// Whether the business blocks the sandbox's `research` AI group.
    pub blocks_research: bool,
    /// Its ads, sealed with its passkey; their images are the sandbox's own.
    pub ads: Vec<Vec<u8>>,
    /// Its campaigns, made and funded once the records are live.
    pub campaigns: Vec<CampaignSpec>,
}

/// A campaign of the corpus: its terms as the portal's form sends them,
/// what it places (each record by its type and the business's own id), and
/// what the operator funds.
#[derive(Debug, Clone)]
pub struct CampaignSpec {
    pub terms: Value,
    pub items: Vec<(RecordType, String)>,
    pub funds: &'static str,
}

#[derive(Debug, Clone)]
pub struct Corpus {
    pub seed: u64,
    pub sizes: Sizes,
    pub businesses: Vec<BusinessSpec>,
}

impl Corpus {
    pub fn record_count(&self) -> usize {
        self.businesses
            .iter()
            .map(|b| b.products.len() + 1 + b.events.len() + b.jobs.len() + b.updates.len() + b.ads.len())
            .sum()
    }
}

/// Sizes of a corpus. The default is what `svc up` seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sizes {
    pub businesses: usize,
    pub products: usize,
    pub events_per_business: usize,
    pub jobs_per_business: usize,
    pub updates_per_business: usize,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            businesses: 20,
            products: 10_000,
            events_per_business: 10,
            jobs_per_business: 5,
            updates_per_business: 5,
        }
    }
}

impl Sizes {
    /// Businesses with products only: no events, jobs or updates.
    pub fn products_only(businesses: usize, products: usize) -> Sizes {
        Sizes { businesses, products, events_per_business: 0, jobs_per_business: 0, updates_per_business: 0 }
    }
}

fn bytes(value: Value) -> Vec<u8> {
    // Records are compact JSON; their exact bytes are what gets sealed.
    serde_json::to_vec(&value).unwrap_or_default()
}

fn seed_of(seed: u64, label: &str) -> [u8; 32] {
    sha256(format!("svc-sandbox/{seed}/{label}").as_bytes())
}

fn amount(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// The corpus of `seed` at `sizes`.
pub fn generate(seed: u64, sizes: Sizes) -> Corpus {
    let n = sizes.businesses.min(BRANDS.len()).max(1);
    let mut rng = Rng::new(seed);
    let businesses = (0..n)
        .map(|i| {
            let products = sizes.products / n + usize::from(i < sizes.products % n);
            business(&mut rng, seed, i, products, sizes)
        })
        .collect();
    Corpus { seed, sizes, businesses }
}

fn business(rng: &mut Rng, seed: u64, i: usize, product_count: usize, sizes: Sizes) -> BusinessSpec {
    let brand = BRANDS[i];
    let (country, currency, language, city, lat, lng) = MARKETS[i % MARKETS.len()];
    let next = MARKETS[(i + 1) % MARKETS.len()];
    let countries = vec![country.to_owned(), next.0.to_owned()];
    let (vertical, category, nouns) = VERTICALS[i % VERTICALS.len()];
    let domain = format!("{}.example", brand.to_ascii_lowercase());

    let products = (0..product_count)
        .map(|p| {
            let adjective = rng.pick(&ADJECTIVES);
            let noun = rng.pick(&nouns);
            let base = 500 + rng.below(49_500);
            let prices: Vec<Value> = [(country, currency), (next.0, next.1)]
                .iter()
                .enumerate()
                .map(|(k, (cc, cur))| json!({"country": cc, "currency": cur, "amount": amount(base + 100 * k as u64)}))
                .collect();
            bytes(json!({
                "schema": "service/products/1",
                "language": language,
                "business_product_id": format!("{}-{p:05}", brand.to_ascii_uppercase()),
                "product_name": format!("{brand} {adjective} {noun}"),
                "countries": countries,
                "vertical": vertical,
                "category": category,
                "channel": *rng.pick(&["online", "in_store", "online_and_in_store"]),
                "brand": brand,
                "tags": [noun.to_ascii_lowercase(), adjective.to_ascii_lowercase(), vertical],
                "short_description": format!("{adjective} {} from {brand}, made to last.", noun.to_ascii_lowercase()),
                "prices": prices,
                "on_sale": rng.below(5) == 0,
                "availability": *rng.pick(&["in_stock", "in_stock", "in_stock", "preorder", "out_of_stock"]),
                "product_url": format!("https://{domain}/p/{p:05}"),
            }))
        })
        .collect();

    let mut file = json!({
        "schema": "service/business_files/1",
        "language": language,
        "business_file_id": "main",
        "countries": countries,
        "description": format!("{brand} sells {vertical} goods from {city}."),
        "brands_owned": [{"name": brand}],
        "markets_served": [country, next.0],
        "cities": [city],
        "delivery": {"options": ["delivery", "pickup"]},
        "payment": {"methods": ["card", "bank_transfer"]},
        "locations": [{"name": format!("{brand} {city}"), "address": format!("{} Market Street", 1 + i), "city": city,
            "country": country, "geo": {"lat": lat, "lng": lng}}],
        "ships_internationally": !i.is_multiple_of(3),
        "year_established": 1950 + (i as i64 * 3),
        "represent": {
            "who_we_are": format!("{brand} is a {vertical} business based in {city}."),
            "what_we_offer": format!("{} lines of {vertical} goods.", product_count),
            "how_to_describe_us": format!("{brand}, the {vertical} shop from {city}."),
        },
    });
    if i.is_multiple_of(4) {
        file["endpoints"] = json!({"domains": [domain], "checkout_url": format!("https://{domain}/checkout")});
    }

    let events = (0..sizes.events_per_business)
        .map(|e| {
            let start = 1_800_000_000 + (i as i64 * 86_400) + (e as i64 * 7 * 86_400);
            let mut event = json!({
                "schema": "service/events/1",
                "language": language,
                "event_id": format!("event-{e}"),
                "countries": [country],
                "title": format!("{brand} {} {}", rng.pick(&["Open Day", "Workshop", "Tasting", "Market", "Talk"]), e + 1),
                "start_at": svc_core::time::UnixMs::from_secs(start).to_rfc3339_secs(),
                "end_at": svc_core::time::UnixMs::from_secs(start + 3 * 3_600).to_rfc3339_secs(),
                "event_type": *rng.pick(&["workshop", "market", "exhibition", "community", "conference"]),
                "attendance_mode": *rng.pick(&["in_person", "online", "mixed"]),
                "description": format!("Meet the {brand} team in {city}."),
                "age_restriction": "all_ages",
                "city": city,
                "geo": {"lat": lat, "lng": lng},
                "ticketed": e % 2 == 0,
            });
            if e % 2 == 0 {
                event["price_min"] = json!(amount(500 + 100 * e as u64));
                event["price_max"] = json!(amount(2_500 + 100 * e as u64));
                event["price_currency"] = json!(currency);
            }
            bytes(event)
        })
        .collect();

    let jobs = (0..sizes.jobs_per_business)
        .map(|j| {
            let disclosed = j % 2 == 0;
            let mut job = json!({
                "schema": "service/jobs/1",
                "language": language,
                "job_id": format!("job-{j}"),
                "countries": [country],
                "title": format!("{} ({brand})", rng.pick(&["Shop Assistant", "Buyer", "Warehouse Lead", "Designer", "Developer"])),
                "description": format!("Join {brand} in {city}."),
                "employment_type": *rng.pick(&["full_time", "part_time", "contract"]),
                "salary_disclosed": disclosed,
                "category": vertical,
                "work_arrangement": *rng.pick(&["on_site", "hybrid", "remote"]),
                "city": city,
                "geo": {"lat": lat, "lng": lng},
                "closing_date": svc_core::time::UnixMs::from_secs(1_800_000_000 + j as i64 * 86_400 * 10).to_rfc3339_secs(),
            });
            if disclosed {
                job["salary_min"] = json!(amount(2_800_000 + 10_000 * rng.below(100)));
                job["salary_max"] = json!(amount(4_500_000 + 10_000 * rng.below(100)));
                job["salary_currency"] = json!(currency);
                job["salary_period"] = json!("year");
            }
            bytes(job)
        })
        .collect();

    let updates = (0..sizes.updates_per_business)
        .map(|u| {
            bytes(json!({
                "schema": "service/updates/1",
                "language": language,
                "update_id": format!("update-{u}"),
                "countries": countries,
                "headline": format!("{brand} {}", rng.pick(&["opens a new shop", "extends its hours", "launches a new range", "updates its returns"])),
                "body": format!("News from {brand} in {city}."),
                "update_type": *rng.pick(&["news", "offer", "announcement"]),
                "relevant_until": svc_core::time::UnixMs::from_secs(1_830_000_000 + u as i64 * 86_400).to_rfc3339_secs(),
                "url": format!("https://{domain}/news/{u}"),
            }))
        })
        .collect();

    // Every fourth business (from the fourth) has no AI policy; two block
    // the `research` group.
    let ai_policy = (i % 4 != 3).then(|| {
        let blocked: &[&str] = if i.is_multiple_of(5) { &["alcohol", "gambling_betting"] } else { &[] };
        svc_core::ai_policy::record_bytes(
            &["cite_as_source", "state_publish_date"],
            &["answer", "quote", "purchase", "hand_to_human"],
            blocked,
        )
    });

    let (ads, campaigns) = paid(i, brand, &domain, &countries, language, vertical, product_count);
    BusinessSpec {
        legal_name: format!("{brand} {}", ["SAS", "GmbH", "SL", "Srl", "BV", "Ltd", "AB", "Inc"][i % 8]),
        brand: brand.to_owned(),
        country: country.to_owned(),
        countries,
        integration_seed: seed_of(seed, &format!("{i}/integration")),
        passkey_seed: seed_of(seed, &format!("{i}/passkey")),
        products,
        business_file: bytes(file),
        events,
        jobs,
        updates,
        ai_policy,
        blocks_research: i == 2 || i == 9,
        ads,
        campaigns,
    }
}

/// Businesses whose first products are sponsored: one in each of three
/// markets (FR and DE, GB and SE, US and FR).
const SPONSORS: [usize; 3] = [0, 5, 7];
/// Products each sponsor places.
const SPONSORED_PRODUCTS: usize = 5;

/// The paid side of business `i`: the first business has two ads with
/// images, one in a `cpc` campaign whose budget pays for one click (the
/// tour's click spends it) and one in a `cpm` campaign; the [`SPONSORS`]
/// sponsor their first products.
fn paid(
    i: usize,
    brand: &str,
    domain: &str,
    countries: &[String],
    language: &str,
    vertical: &str,
    product_count: usize,
) -> (Vec<Vec<u8>>, Vec<CampaignSpec>) {
    let terms = |name: String, placement: &str, basis: &str, net_price: &str, budget: &str, keywords: &[&str]| {
        json!({"name": name, "placement": placement, "budget": budget, "net_price": net_price, "basis": basis,
            "keywords": keywords, "countries": countries, "formats": ["compact", "card"],
            "repeats": {"allowed": false, "max_per_conversation": 1}})
    };
    let mut ads = Vec::new();
    let mut campaigns = Vec::new();
    if i == 0 {
        let lower = brand.to_ascii_lowercase();
        let made = [
            (
                "reading-corner",
                "Reading corner",
                "An armchair and a lamp for long evenings.",
                "Sit and read",
                "cpc",
                "5.00",
            ),
            ("desk-lamps", "Desk lamps", "Warm light for the desk, made to last.", "See the lamps", "cpm", "4.00"),
        ];
        for (ad_id, headline, description, cta, basis, net_price) in made {
            let picture = format!("{lower}-{ad_id}");
            ads.push(bytes(json!({
                "schema": "service/ads/1",
                "language": language,
                "ad_id": ad_id,
                "countries": countries,
                "headline": format!("{brand} {}", headline.to_lowercase()),
                "description": description,
                "cta_text": cta,
                "destination_url": format!("https://{domain}/{ad_id}"),
                "image_square_url": sandbox_images::url(&picture, Slot::Square),
                "image_landscape_url": sandbox_images::url(&picture, Slot::Landscape),
            })));
            // The cpc campaign's budget is one click at `svc up`'s 20 % take
            // (5.00 net is 6.25); the cpm one's hundreds of renders.
            let budget = if basis == "cpc" { "6.25" } else { "2.00" };
            campaigns.push(CampaignSpec {
                terms: terms(headline.to_owned(), "ad", basis, net_price, budget, &["lamp", "lighting", "reading"]),
                items: vec![(RecordType::Ads, ad_id.to_owned())],
                funds: budget,
            });
        }
    }
    if SPONSORS.contains(&i) && product_count > 0 {
        let items = (0..product_count.min(SPONSORED_PRODUCTS))
            .map(|p| (RecordType::Products, format!("{}-{p:05}", brand.to_ascii_uppercase())))
            .collect();
        campaigns.push(CampaignSpec {
            terms: terms(format!("{brand} picks"), "sponsorship", "cpm", "6.00", "30.00", &[vertical]),
            items,
            funds: "30.00",
        });
    }
    (ads, campaigns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::ids::RecordType;
    use svc_core::records::{ValidationContext, validate};

    // rule: R1.31, R1.41
    #[test]
    fn the_corpus_is_deterministic_sized_and_valid() {
        let corpus = generate(7, Sizes::default());
        let again = generate(7, Sizes::default());
        assert_eq!(corpus.businesses.len(), 20);
        let countries: std::collections::BTreeSet<&str> =
            corpus.businesses.iter().map(|b| b.country.as_str()).collect();
        assert!(countries.len() >= 6, "{countries:?}");
        assert_eq!(corpus.businesses.iter().map(|b| b.products.len()).sum::<usize>(), 10_000);
        assert!(corpus.businesses.iter().any(|b| b.ai_policy.is_none()));
        assert!(corpus.businesses.iter().any(|b| b.blocks_research));
        for (a, b) in corpus.businesses.iter().zip(&again.businesses) {
            assert_eq!(a.products, b.products, "same seed, same bytes");
            assert_eq!(
                (&a.events, &a.business_file, &a.integration_seed),
                (&b.events, &b.business_file, &b.integration_seed)
            );
        }
        assert_ne!(generate(8, Sizes::default()).businesses[0].products, corpus.businesses[0].products);

        let brands: Vec<String> =
            corpus.businesses.iter().flat_map(|b| [b.brand.clone(), b.legal_name.clone()]).collect();
        for business in &corpus.businesses {
            let ctx = ValidationContext::new(
                vec![business.brand.clone()],
                brands.iter().filter(|n| !n.starts_with(&business.brand)).cloned().collect(),
                Some(business.countries.clone()),
            );
            let sets: [(RecordType, Vec<&Vec<u8>>); 6] = [
                (RecordType::Products, business.products.iter().take(50).collect()),
                (RecordType::BusinessFiles, vec![&business.business_file]),
                (RecordType::Events, business.events.iter().collect()),
                (RecordType::Jobs, business.jobs.iter().collect()),
                (RecordType::Updates, business.updates.iter().collect()),
                (RecordType::Ads, business.ads.iter().collect()),
            ];
            for (kind, records) in sets {
                for record in records {
                    if let Err(errors) = validate(record, kind, &ctx) {
                        panic!("{} {kind:?} {}: {errors:?}", business.brand, String::from_utf8_lossy(record));
                    }
                }
            }
            if let Some(policy) = &business.ai_policy {
                svc_core::ai_policy::parse_record(policy).unwrap();
            }
            for campaign in &business.campaigns {
                let terms = serde_json::from_value(campaign.terms.clone()).unwrap();
                svc_core::ads::campaign::check(&terms).unwrap();
            }
        }
        // Ads in both formats with their images, a cpc and a cpm campaign,
        // and products sponsored in several countries.
        let campaigns: Vec<&CampaignSpec> = corpus.businesses.iter().flat_map(|b| &b.campaigns).collect();
        let basis =
            |b: &str| campaigns.iter().filter(|c| c.terms["placement"] == "ad" && c.terms["basis"] == b).count();
        assert_eq!((basis("cpc"), basis("cpm")), (1, 1));
        let ad: Value = serde_json::from_slice(&corpus.businesses[0].ads[0]).unwrap();
        for slot in Slot::ALL {
            let image = sandbox_images::drawn(ad[slot.url_member()].as_str().unwrap()).unwrap();
            svc_core::ads::images::judge(slot, &image).unwrap();
        }
        let sponsored: std::collections::BTreeSet<&str> = corpus
            .businesses
            .iter()
            .filter(|b| b.campaigns.iter().any(|c| c.terms["placement"] == "sponsorship"))
            .flat_map(|b| b.countries.iter().map(String::as_str))
            .collect();
        assert!(sponsored.len() >= 4, "{sponsored:?}");
    }
}
