//! Words for the record editor: a label and a one-line hint for each record
//! member, and a name for each value of an enumeration, in English and French.
//!
//! A business owner never reads the records spec, so the editor never shows a
//! member's name (`business_product_id`) or a value's code (`18_plus`). The
//! words follow the GOV.UK form patterns: one question a field, a short hint
//! with an example, plain words. Hints speak of what a person sees (pickers,
//! rows, Yes/No, a date with its time zone), never of JSON or RFC 3339, and
//! give the limits a person would otherwise only learn from a refusal.
//!
//! Words are keyed by the member's name alone, as the editor's inputs are: a
//! name several collections share (`title`, `description`, `countries`) has
//! words that fit every place it appears. The tests hold these tables to the
//! field tables both ways, so a new member cannot go unlabelled and a removed
//! one leaves no dead words.

/// The languages the editor speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    Fr,
}

/// Ranges of an `Accept-Language` header read at most: a browser sends a
/// handful, and a hostile header must not cost more than that.
const MAX_RANGES: usize = 32;

impl Lang {
    /// The language a person's browser prefers, from an `Accept-Language`
    /// header value (RFC 9110 12.5.4): the highest-weighted range whose
    /// primary subtag is `en` or `fr`, the first listed on a tie; English when
    /// none is. Only the first 32 ranges are read. A range with a malformed
    /// weight is passed over: a weight that cannot be read cannot be compared.
    pub fn from_accept_language(header: &str) -> Lang {
        let (mut best, mut lang) = (0, Lang::En);
        for range in header.split(',').take(MAX_RANGES) {
            let mut parts = range.split(';');
            let Some(found) = parts.next().and_then(Lang::of_range) else { continue };
            let weight = match (parts.next(), parts.next()) {
                (None, _) => Some(1000),
                // RFC 9110 allows a weight and nothing else after a range.
                (Some(param), None) => param
                    .split_once('=')
                    .filter(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                    .and_then(|(_, value)| qvalue(value.trim())),
                (Some(_), Some(_)) => None,
            };
            // A weight of 0 means "not acceptable", so it never wins.
            if let Some(weight) = weight.filter(|q| *q > best) {
                (best, lang) = (weight, found);
            }
        }
        lang
    }

    /// `en` or `fr`, for the page's `lang` attribute.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Fr => "fr",
        }
    }

    /// The language a range names by its primary subtag (`fr-CA` is French).
    fn of_range(range: &str) -> Option<Lang> {
        let primary = range.trim().split('-').next()?;
        if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else if primary.eq_ignore_ascii_case("fr") {
            Some(Lang::Fr)
        } else {
            None
        }
    }

    /// Where this language's words are in a table entry.
    fn slot(self) -> usize {
        match self {
            Lang::En => 0,
            Lang::Fr => 1,
        }
    }
}

/// A qvalue in thousandths: `0` to `0.999` or `1` to `1.000`, at most three
/// decimals. Read by hand so that `1e0`, `NaN` or `0.5000` are refused as the
/// RFC's grammar refuses them, not taken as a float parser would.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths =
        fraction.bytes().chain(std::iter::repeat(b'0')).take(3).fold(0, |n, b| n * 10 + u16::from(b - b'0'));
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// A member's words in one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    pub label: &'static str,
    pub hint: &'static str,
}

const fn w(label: &'static str, hint: &'static str) -> Words {
    Words { label, hint }
}

/// The words for a member named `name` (any collection, nested members too:
/// `amount`, `lat`, `options`...). None for `schema`, which the editor sets,
/// and for a name no collection has.
pub fn member(name: &str, lang: Lang) -> Option<Words> {
    let at = MEMBERS.binary_search_by(|(n, _)| (*n).cmp(name)).ok()?;
    Some(MEMBERS[at].1[lang.slot()])
}

/// The words for one value of an enumeration (`in_stock` -> "In stock" /
/// "En stock", `18_plus` -> "18 and over" / "18 ans et plus"), None for a
/// value no enumeration has.
pub fn option(value: &str, lang: Lang) -> Option<&'static str> {
    let at = OPTIONS.binary_search_by(|(v, _)| (*v).cmp(value)).ok()?;
    Some(OPTIONS[at].1[lang.slot()])
}

/// "Yes"/"Oui" and "No"/"Non" for a boolean member.
pub fn yes_no(value: bool, lang: Lang) -> &'static str {
    match (value, lang) {
        (true, Lang::En) => "Yes",
        (true, Lang::Fr) => "Oui",
        (false, Lang::En) => "No",
        (false, Lang::Fr) => "Non",
    }
}

/// Each member's words, English then French, sorted by name for a binary search.
///
/// The own ids say that the code must stay: the record id is derived from it,
/// so a new code makes a new record rather than a new version (R2.1.4,
/// R2.1.5). Slugs (`vertical`, a job's `category`) ask for lower case without
/// accents, the only form they accept. Money and coordinates ask for a dot:
/// the editor reads them as typed, not in the page's language.
const MEMBERS: &[(&str, [Words; 2])] = &[
    (
        "ad_id",
        [
            w("Your ad ID", "Your own code for this ad, such as AD-1042. Keep it the same: a new code makes a new ad."),
            w(
                "Identifiant de l’annonce chez vous",
                "Votre code pour cette annonce, par exemple AD-1042. Gardez-le : un autre code crée une autre annonce.",
            ),
        ],
    ),
    (
        "address",
        [
            w("Street address", "The number and street, on one line, such as 12 High Street."),
            w("Adresse", "Le numéro et la rue, sur une ligne, par exemple 12 rue de la République."),
        ],
    ),
    (
        "age_restriction",
        [
            w("Age limit", "The youngest age allowed in, if there is a limit."),
            w("Limite d’âge", "L’âge minimum pour entrer, s’il y en a un."),
        ],
    ),
    (
        "amount",
        [
            w("Amount", "The price as you would write it, such as 39.90 (a dot before the cents)."),
            w("Montant", "Le prix tel que vous l’écririez, par exemple 39.90 (un point avant les centimes)."),
        ],
    ),
    (
        "api_url",
        [
            w(
                "API address",
                "For your developers: your API's web address, starting https://, on one of the domains listed here.",
            ),
            w(
                "Adresse de l’API",
                "Pour vos développeurs : l’adresse web de votre API, en https://, sur l’un des domaines indiqués ici.",
            ),
        ],
    ),
    (
        "attendance_mode",
        [
            w("How people attend", "In person, online, or both."),
            w("Comment y participer", "Sur place, en ligne, ou les deux."),
        ],
    ),
    (
        "availability",
        [
            w("Availability", "Whether people can buy it now, and if not, why."),
            w("Disponibilité", "Si l’on peut l’acheter maintenant, et sinon, pourquoi."),
        ],
    ),
    (
        "body",
        [
            w("Details", "What people need to know, such as Closed on 24 December from 4 pm. Up to 5,000 characters."),
            w("Détails", "Ce qu’il faut savoir, par exemple Fermé le 24 décembre dès 16 h. 5 000 caractères au plus."),
        ],
    ),
    (
        "booking_url",
        [
            w("Booking address", "Where people book, on one of your domains, such as https://lumio.example/book."),
            w(
                "Adresse de réservation",
                "Où l’on réserve, sur l’un de vos domaines, par exemple https://lumio.example/reserver.",
            ),
        ],
    ),
    (
        "brand",
        [
            w("Brand", "The brand on the product, such as Lumio. It must be yours or one your business file lists."),
            w(
                "Marque",
                "La marque du produit, par exemple Lumio. La vôtre, ou une marque citée dans votre fiche entreprise.",
            ),
        ],
    ),
    (
        "brands_owned",
        [
            w("Brands you own", "Each brand that belongs to you, one per row, such as Lumio."),
            w("Vos marques", "Chaque marque qui vous appartient, une par ligne, par exemple Lumio."),
        ],
    ),
    (
        "brands_sold",
        [
            w(
                "Other brands you sell",
                "Other makers' brands you sell, one per row, such as Acme. Listing them lets your records name them.",
            ),
            w(
                "Marques que vous revendez",
                "Les marques d’autres fabricants que vous vendez, par exemple Acme. Vos fiches pourront alors les citer.",
            ),
        ],
    ),
    (
        "business_file_id",
        [
            w(
                "Your file ID",
                "Your own code for this file, such as main. Keep it the same: a new code makes a new file.",
            ),
            w(
                "Identifiant de la fiche chez vous",
                "Votre code pour cette fiche, par exemple principale. Gardez-le : un autre code crée une autre fiche.",
            ),
        ],
    ),
    (
        "business_product_id",
        [
            w(
                "Your product ID",
                "Your own code for this product, such as SKU-1042. Keep it the same: a new code makes a new product.",
            ),
            w(
                "Identifiant du produit chez vous",
                "Votre code pour ce produit, par exemple SKU-1042. Gardez-le : un autre code crée un autre produit.",
            ),
        ],
    ),
    (
        "category",
        [
            w("Category", "The kind of product or job, such as furniture or warehouse (lower case, _ between words)."),
            w(
                "Catégorie",
                "Le type de produit ou de poste, comme mobilier ou logistique (minuscules sans accents, _ entre les mots).",
            ),
        ],
    ),
    (
        "channel",
        [
            w("Where it is sold", "Online, in your shops, or both."),
            w("Où il est vendu", "En ligne, en magasin, ou les deux."),
        ],
    ),
    (
        "checkout_url",
        [
            w("Checkout address", "Where people pay, on one of your domains, such as https://lumio.example/checkout."),
            w(
                "Adresse de paiement",
                "Où l’on paie, sur l’un de vos domaines, par exemple https://lumio.example/paiement.",
            ),
        ],
    ),
    (
        "cities",
        [
            w("Cities", "Each town or city where you do business, one per row, such as Lyon."),
            w("Villes", "Chaque ville où vous exercez, une par ligne, par exemple Lyon."),
        ],
    ),
    (
        "city",
        [
            w("Town or city", "The town or city it is in, such as Lyon."),
            w("Ville", "La ville concernée, par exemple Lyon."),
        ],
    ),
    (
        "closing_date",
        [
            w("Closing date", "The last moment people can apply, such as 31 Jan 2027, 23:59, Europe/Paris."),
            w(
                "Date limite de candidature",
                "Le dernier moment pour postuler, par exemple 31/01/2027 23:59, Europe/Paris.",
            ),
        ],
    ),
    (
        "countries",
        [
            w("Countries", "Each country where people should find this, one per row, up to 50."),
            w("Pays", "Chaque pays où l’on doit trouver cette fiche, un par ligne, 50 au plus."),
        ],
    ),
    (
        "country",
        [w("Country", "The country this price or place is for."), w("Pays", "Le pays de ce prix ou de ce lieu.")],
    ),
    (
        "cta_text",
        [
            w("Button text", "The words on the ad's button, such as See the lamps. Up to 30 characters."),
            w(
                "Texte du bouton",
                "Les mots du bouton de l’annonce, par exemple Voir les lampes. 30 caractères au plus.",
            ),
        ],
    ),
    (
        "currency",
        [
            w("Currency", "The currency of this price, such as EUR (Euro)."),
            w("Devise", "La devise de ce prix, par exemple EUR (Euro)."),
        ],
    ),
    (
        "delivery",
        [
            w("Delivery", "How customers get what they buy from you."),
            w("Livraison", "Comment vos clients reçoivent leurs achats."),
        ],
    ),
    (
        "description",
        [
            w("Description", "What people should know, in plain words, such as Brass lamps made in Lyon since 2019."),
            w("Description", "Ce qu’il faut savoir, en mots simples, par exemple Lampes en laiton faites à Lyon."),
        ],
    ),
    (
        "destination_url",
        [
            w("Ad link", "The page the ad opens, such as https://lumio.example/lamps, used exactly as typed."),
            w(
                "Lien de l’annonce",
                "La page qu’ouvre l’annonce, par exemple https://lumio.example/lampes, telle que saisie.",
            ),
        ],
    ),
    (
        "domains",
        [
            w(
                "Your domains",
                "Each web domain these addresses use, one per row, in lower case, such as shop.example.com.",
            ),
            w(
                "Vos domaines",
                "Chaque domaine de ces adresses, un par ligne, en minuscules, par exemple boutique.exemple.fr.",
            ),
        ],
    ),
    (
        "employment_type",
        [
            w("Type of job", "The kind of contract or hours the job has."),
            w("Type de contrat", "La nature du contrat ou du temps de travail."),
        ],
    ),
    (
        "end_at",
        [
            w("End date and time", "When it ends, such as 12 Dec 2026, 22:00. It cannot end before it starts."),
            w("Date et heure de fin", "Quand il se termine, par exemple 12/12/2026 22:00. Pas avant le début."),
        ],
    ),
    (
        "endpoints",
        [
            w(
                "Authorised addresses",
                "Where AI assistants may send people to pay, order or book. Only on your own domains.",
            ),
            w(
                "Adresses autorisées",
                "Où les assistants IA peuvent envoyer les gens payer, commander ou réserver. Sur vos domaines seulement.",
            ),
        ],
    ),
    (
        "event_id",
        [
            w(
                "Your event ID",
                "Your own code for this event, such as EVT-1042. Keep it the same: a new code makes a new event.",
            ),
            w(
                "Identifiant de l’événement chez vous",
                "Votre code pour cet événement, par exemple EVT-1042. Gardez-le : un autre code en crée un autre.",
            ),
        ],
    ),
    (
        "event_type",
        [
            w("Type of event", "The kind of event, so people can find it."),
            w("Type d’événement", "La nature de l’événement, pour qu’on le trouve facilement."),
        ],
    ),
    (
        "geo",
        [
            w("Map position", "The exact spot as latitude and longitude, such as 45.76 and 4.84. Copy it from a map."),
            w(
                "Position sur la carte",
                "Le point exact en latitude et longitude, par exemple 45.76 et 4.84, relevé sur une carte.",
            ),
        ],
    ),
    (
        "gtin",
        [
            w("Barcode number", "The 8, 12, 13 or 14 digits under the product's barcode, such as 4006381333931."),
            w("Numéro de code-barres", "Les 8, 12, 13 ou 14 chiffres sous le code-barres, par exemple 4006381333931."),
        ],
    ),
    (
        "headline",
        [
            w("Headline", "A short title people see first, such as Holiday opening hours."),
            w("Titre", "Un titre court, lu en premier, par exemple Horaires des fêtes."),
        ],
    ),
    (
        "how_to_describe_us",
        [
            w("How to describe us", "The words AI assistants should use for you, such as Lamp makers from Lyon."),
            w(
                "Comment parler de nous",
                "Les mots que les assistants IA doivent employer pour vous, par exemple Fabricant de lampes lyonnais.",
            ),
        ],
    ),
    (
        "how_we_work",
        [
            w("How we work", "How you make, sell or deliver, such as Made to order in our Lyon workshop."),
            w(
                "Notre façon de travailler",
                "Comment vous fabriquez, vendez ou livrez, par exemple Fait sur commande dans notre atelier.",
            ),
        ],
    ),
    (
        "image_landscape_url",
        [
            w(
                "Wide image address",
                "Web address of a wide picture, 1.91 to 1 (such as 1200 × 628), up to 512 KB, starting https://.",
            ),
            w(
                "Adresse de l’image large",
                "Adresse web d’une image large, 1,91 pour 1 (par exemple 1200 × 628), 512 Ko au plus, en https://.",
            ),
        ],
    ),
    (
        "image_square_url",
        [
            w(
                "Square image address",
                "Web address of a square picture (such as 600 × 600), up to 512 KB, starting https://.",
            ),
            w(
                "Adresse de l’image carrée",
                "Adresse web d’une image carrée (par exemple 600 × 600), 512 Ko au plus, en https://.",
            ),
        ],
    ),
    (
        "job_id",
        [
            w(
                "Your job ID",
                "Your own code for this job, such as JOB-1042. Keep it the same: a new code makes a new job.",
            ),
            w(
                "Identifiant de l’offre chez vous",
                "Votre code pour cette offre, par exemple JOB-1042. Gardez-le : un autre code crée une autre offre.",
            ),
        ],
    ),
    (
        "language",
        [
            w("Language", "The language you write this in, such as French."),
            w("Langue", "La langue de rédaction, par exemple le français."),
        ],
    ),
    (
        "lat",
        [
            w("Latitude", "From -90 to 90, with a dot before the decimals, such as 45.76."),
            w("Latitude", "De -90 à 90, avec un point avant les décimales, par exemple 45.76."),
        ],
    ),
    (
        "lng",
        [
            w("Longitude", "From -180 to 180, with a dot before the decimals, such as 4.84."),
            w("Longitude", "De -180 à 180, avec un point avant les décimales, par exemple 4.84."),
        ],
    ),
    (
        "locations",
        [
            w("Your locations", "Each shop, office or site people can visit, up to 100."),
            w("Vos établissements", "Chaque boutique, bureau ou site où l’on peut venir, 100 au plus."),
        ],
    ),
    (
        "markets_served",
        [
            w("Markets you serve", "Each market you sell to, one per row, such as Belgium or Northern Italy."),
            w("Marchés servis", "Chaque marché que vous servez, un par ligne, par exemple Belgique ou Italie du Nord."),
        ],
    ),
    (
        "methods",
        [
            w("Ways to pay", "Tick every way customers can pay you, at least one."),
            w("Moyens de paiement", "Cochez chaque moyen de paiement accepté, au moins un."),
        ],
    ),
    (
        "name",
        [
            w("Name", "The name as people know it, such as Lumio or Lumio Lyon."),
            w("Nom", "Le nom connu du public, par exemple Lumio ou Lumio Lyon."),
        ],
    ),
    (
        "on_sale",
        [
            w("On sale", "Yes if these prices are reduced for a sale or special offer right now."),
            w("En promotion", "Oui si ces prix sont réduits en ce moment (soldes ou promotion)."),
        ],
    ),
    (
        "options",
        [
            w("Delivery options", "Tick every way customers can get their order, at least one."),
            w("Modes de livraison", "Cochez chaque façon de recevoir une commande, au moins une."),
        ],
    ),
    (
        "order_url",
        [
            w("Order address", "Where people order, on one of your domains, such as https://lumio.example/order."),
            w(
                "Adresse de commande",
                "Où l’on commande, sur l’un de vos domaines, par exemple https://lumio.example/commande.",
            ),
        ],
    ),
    ("payment", [w("Payment", "How customers can pay you."), w("Paiement", "Comment vos clients peuvent vous payer.")]),
    (
        "price_currency",
        [
            w(
                "Ticket currency",
                "The currency of the ticket prices, such as EUR (Euro). Needed with a price, and only then.",
            ),
            w(
                "Devise des billets",
                "La devise des billets, par exemple EUR (Euro). Requise avec un prix, sinon laissez vide.",
            ),
        ],
    ),
    (
        "price_max",
        [
            w("Highest price", "The most expensive ticket, such as 25.00. Not below the lowest price."),
            w("Prix le plus élevé", "Le billet le plus cher, par exemple 25.00. Pas en dessous du prix le plus bas."),
        ],
    ),
    (
        "price_min",
        [
            w("Lowest price", "The cheapest ticket, such as 12.50 (a dot before the cents), or 0 if it is free."),
            w(
                "Prix le plus bas",
                "Le billet le moins cher, par exemple 12.50 (un point avant les centimes), ou 0 si gratuit.",
            ),
        ],
    ),
    (
        "prices",
        [
            w("Prices", "One price for each of the countries above, and no other."),
            w("Prix", "Un prix pour chacun des pays ci-dessus, et aucun autre."),
        ],
    ),
    (
        "product_name",
        [
            w("Product name", "The name people know it by, such as Oak desk lamp."),
            w("Nom du produit", "Le nom sous lequel on le connaît, par exemple Lampe de bureau en chêne."),
        ],
    ),
    (
        "product_url",
        [
            w("Product page", "The web address of its page on your site, such as https://shop.example.com/p/1042."),
            w(
                "Page du produit",
                "L’adresse de sa page sur votre site, par exemple https://boutique.exemple.fr/p/1042.",
            ),
        ],
    ),
    (
        "region",
        [
            w("Region", "The region, state or county, such as Brittany."),
            w("Région", "La région ou le département, par exemple Bretagne."),
        ],
    ),
    (
        "relevant_until",
        [
            w("Relevant until", "When this news stops being useful, such as the day after a closure."),
            w("Valable jusqu’au", "Quand cette actualité ne sert plus, par exemple le lendemain d’une fermeture."),
        ],
    ),
    (
        "represent",
        [
            w(
                "In your own words",
                "How AI assistants should present you. Given when your file is opened, never in search results.",
            ),
            w(
                "Avec vos propres mots",
                "Comment les assistants IA doivent vous présenter. Lu à l’ouverture de votre fiche, jamais en recherche.",
            ),
        ],
    ),
    (
        "salary_currency",
        [
            w("Salary currency", "The currency of the pay, such as EUR (Euro)."),
            w("Devise du salaire", "La devise du salaire, par exemple EUR (Euro)."),
        ],
    ),
    (
        "salary_disclosed",
        [
            w(
                "Show the salary?",
                "If Yes, give at least the lowest pay, its currency and period. If No, leave them empty.",
            ),
            w(
                "Afficher le salaire ?",
                "Si oui, donnez au moins le bas de la fourchette, la devise et la période. Sinon, laissez-les vides.",
            ),
        ],
    ),
    (
        "salary_max",
        [
            w("Highest salary", "The most it pays, such as 52000 (no spaces). Not below the lowest salary."),
            w(
                "Salaire, fourchette haute",
                "Le haut de la fourchette, par exemple 52000 (sans espace). Pas en dessous de la fourchette basse.",
            ),
        ],
    ),
    (
        "salary_min",
        [
            w("Lowest salary", "The least it pays, such as 42000 (no spaces, a dot before any cents)."),
            w(
                "Salaire, fourchette basse",
                "Le bas de la fourchette, par exemple 42000 (sans espace, un point avant les centimes).",
            ),
        ],
    ),
    (
        "salary_period",
        [
            w("Salary period", "Whether these amounts are per hour, day, week, month or year."),
            w("Période du salaire", "Si ces montants sont par heure, par jour, par semaine, par mois ou par an."),
        ],
    ),
    (
        "ships_internationally",
        [
            w("Ships abroad", "Yes if you send orders to other countries."),
            w("Livraison à l’étranger", "Oui si vous expédiez des commandes vers d’autres pays."),
        ],
    ),
    (
        "short_description",
        [
            w(
                "Short description",
                "A few plain sentences, such as A brass desk lamp with a linen shade. Up to 1,000 characters.",
            ),
            w(
                "Description courte",
                "Quelques phrases simples, par exemple Lampe de bureau en laiton, abat-jour en lin. 1 000 caractères au plus.",
            ),
        ],
    ),
    (
        "start_at",
        [
            w("Start date and time", "When it starts where it happens, such as 12 Dec 2026, 18:00, Europe/Paris."),
            w(
                "Date et heure de début",
                "Quand il commence, à l’heure du lieu, par exemple 12/12/2026 18:00, Europe/Paris.",
            ),
        ],
    ),
    (
        "tags",
        [
            w("Keywords", "Words people might search for, one per row, such as desk or LED. Up to 32."),
            w("Mots-clés", "Des mots qu’on pourrait chercher, un par ligne, par exemple bureau ou LED. 32 au plus."),
        ],
    ),
    (
        "ticketed",
        [
            w("Tickets needed", "Yes if people need a ticket to get in, even a free one."),
            w("Billet obligatoire", "Oui s’il faut un billet pour entrer, même gratuit."),
        ],
    ),
    (
        "timezone",
        [
            w("Time zone", "The time zone of the place, such as Europe/Paris."),
            w("Fuseau horaire", "Le fuseau horaire du lieu, par exemple Europe/Paris."),
        ],
    ),
    (
        "title",
        [
            w("Title", "The name people see, such as Lamp launch evening or Shop assistant."),
            w("Titre", "Le nom affiché, par exemple Soirée de lancement ou Vendeur (H/F)."),
        ],
    ),
    (
        "update_id",
        [
            w(
                "Your update ID",
                "Your own code for this update, such as UPD-1042. Keep it the same: a new code makes a new update.",
            ),
            w(
                "Identifiant de l’actualité chez vous",
                "Votre code pour cette actualité, par exemple UPD-1042. Gardez-le : un autre code en crée une autre.",
            ),
        ],
    ),
    (
        "update_type",
        [
            w("Type of update", "What kind of news this is, such as an offer or a closure."),
            w("Type d’actualité", "La nature de l’actualité, par exemple une offre ou une fermeture."),
        ],
    ),
    (
        "url",
        [
            w("Link for more", "A page with more about it, such as https://example.com/news/12."),
            w("Lien pour en savoir plus", "Une page qui en dit plus, par exemple https://exemple.fr/actus/12."),
        ],
    ),
    (
        "vertical",
        [
            w("Sector", "The broad market it is in, such as home or fashion (lower case, _ between words)."),
            w("Secteur", "Le grand secteur, par exemple maison ou mode (minuscules sans accents, _ entre les mots)."),
        ],
    ),
    (
        "what_we_offer",
        [
            w("What we offer", "What you sell or do, in plain words, such as Desk and floor lamps."),
            w(
                "Ce que nous proposons",
                "Ce que vous vendez ou faites, en mots simples, par exemple Lampes de bureau et lampadaires.",
            ),
        ],
    ),
    (
        "what_we_stand_for",
        [
            w("What we stand for", "What matters to you, such as Repair before replacing."),
            w("Nos valeurs", "Ce qui compte pour vous, par exemple Réparer plutôt que jeter."),
        ],
    ),
    (
        "who_we_are",
        [
            w("Who we are", "Your business in a few sentences, such as A family lamp maker since 1998."),
            w(
                "Qui nous sommes",
                "Votre entreprise en quelques phrases, par exemple Fabricant familial de lampes depuis 1998.",
            ),
        ],
    ),
    (
        "work_arrangement",
        [
            w("On site or remote", "At your premises, from home, or a mix of both."),
            w("Sur site ou à distance", "Dans vos locaux, en télétravail, ou un mélange des deux."),
        ],
    ),
    (
        "year_established",
        [
            w("Year founded", "The year your business started, such as 1998."),
            w("Année de création", "L’année où votre entreprise a démarré, par exemple 1998."),
        ],
    ),
];

/// Each enumeration value's words, English then French, sorted by value for a
/// binary search. A value two enumerations share (`online`, `other`) has words
/// that fit both.
const OPTIONS: &[(&str, [&str; 2])] = &[
    ("18_plus", ["18 and over", "18 ans et plus"]),
    ("21_plus", ["21 and over", "21 ans et plus"]),
    ("all_ages", ["All ages", "Tous âges"]),
    ("announcement", ["Announcement", "Communiqué"]),
    ("apprenticeship", ["Apprenticeship", "Apprentissage"]),
    ("backorder", ["On back order", "En réapprovisionnement"]),
    ("bank_transfer", ["Bank transfer", "Virement bancaire"]),
    ("card", ["Card", "Carte bancaire"]),
    ("cash", ["Cash", "Espèces"]),
    ("closure", ["Closure", "Fermeture"]),
    ("community", ["Community event", "Événement local"]),
    ("concert", ["Concert", "Concert"]),
    ("conference", ["Conference", "Conférence"]),
    ("contract", ["Contract or freelance", "Freelance ou prestation"]),
    ("day", ["Per day", "Par jour"]),
    ("delivery", ["Local delivery", "Livraison locale"]),
    ("digital", ["Digital (download or online)", "Numérique (téléchargement ou en ligne)"]),
    ("direct_debit", ["Direct debit", "Prélèvement"]),
    ("discontinued", ["Discontinued", "Plus commercialisé"]),
    ("exhibition", ["Exhibition", "Exposition"]),
    ("festival", ["Festival", "Festival"]),
    ("full_time", ["Full time", "Temps plein"]),
    ("hour", ["Per hour", "Par heure"]),
    ("hybrid", ["Hybrid (partly remote)", "Hybride (télétravail partiel)"]),
    ("in_person", ["In person", "Sur place"]),
    ("in_stock", ["In stock", "En stock"]),
    ("in_store", ["In store", "En magasin"]),
    ("internship", ["Internship", "Stage"]),
    ("invoice", ["Invoice", "Sur facture"]),
    ("market", ["Market", "Marché"]),
    ("mixed", ["In person and online", "Sur place et en ligne"]),
    ("mobile_wallet", ["Mobile wallet", "Paiement mobile"]),
    ("month", ["Per month", "Par mois"]),
    ("news", ["News", "Actualité"]),
    ("offer", ["Special offer", "Offre spéciale"]),
    ("on_site", ["On site", "Sur place"]),
    ("online", ["Online", "En ligne"]),
    ("online_and_in_store", ["Online and in store", "En ligne et en magasin"]),
    ("other", ["Other", "Autre"]),
    ("out_of_stock", ["Out of stock", "En rupture de stock"]),
    ("part_time", ["Part time", "Temps partiel"]),
    ("pickup", ["Pick up in person", "Retrait sur place"]),
    ("preorder", ["Pre-order", "En précommande"]),
    ("recall", ["Product recall", "Rappel de produit"]),
    ("remote", ["Remote", "Télétravail"]),
    ("shipping", ["Shipping by post or carrier", "Envoi par la poste ou un transporteur"]),
    ("sport", ["Sport", "Sport"]),
    ("temporary", ["Temporary", "Temporaire (CDD, intérim)"]),
    ("theatre", ["Theatre", "Théâtre"]),
    ("volunteer", ["Volunteer", "Bénévolat"]),
    ("week", ["Per week", "Par semaine"]),
    ("workshop", ["Workshop", "Atelier"]),
    ("year", ["Per year", "Par an"]),
];

#[cfg(test)]
mod tests {
    use super::super::form::{Field, Form};
    use super::*;
    use crate::ids::RecordType;

    const LANGS: [Lang; 2] = [Lang::En, Lang::Fr];

    /// Every field table the editor shows: the five collections' and the ads'
    /// (ads are edited like records but are not a searchable collection).
    fn tables() -> Vec<&'static [Field]> {
        RecordType::COLLECTIONS
            .into_iter()
            .chain([RecordType::Ads])
            .map(|kind| super::super::definition(kind).unwrap_or_else(|| panic!("{kind:?} has no field table")).fields)
            .collect()
    }

    /// Every member of those tables, those of objects and lists of objects too.
    fn fields() -> Vec<Field> {
        fn walk(fields: &'static [Field], out: &mut Vec<Field>) {
            for field in fields {
                out.push(*field);
                if let Form::Object(inner) | Form::ObjectList { fields: inner, .. } = field.form {
                    walk(inner, out);
                }
            }
        }
        let mut out = Vec::new();
        for table in tables() {
            walk(table, &mut out);
        }
        out
    }

    #[test]
    fn every_member_has_words_in_both_languages() {
        let fields = fields();
        assert!(fields.iter().any(|f| f.name == "lat"), "the walk reaches nested members");
        for field in fields.iter().filter(|f| !matches!(f.form, Form::Schema)) {
            for lang in LANGS {
                let words =
                    member(field.name, lang).unwrap_or_else(|| panic!("no {lang:?} words for `{}`", field.name));
                assert!(!words.label.trim().is_empty(), "`{}` {lang:?}: empty label", field.name);
                assert!(!words.hint.trim().is_empty(), "`{}` {lang:?}: empty hint", field.name);
                assert_ne!(words.label, field.name, "`{}` {lang:?}: the label is the member's name", field.name);
                assert!(!words.label.contains('_'), "`{}` {lang:?}: {:?} reads as a code", field.name, words.label);
            }
        }
        assert_eq!(member("schema", Lang::En), None, "the editor sets `schema`");
        assert_eq!(member("no_such_member", Lang::Fr), None);
    }

    #[test]
    fn every_enumeration_value_has_words_in_both_languages() {
        let mut values = 0;
        for field in fields() {
            if let Form::Enum(allowed) | Form::EnumSet(allowed) = field.form {
                for value in allowed {
                    for lang in LANGS {
                        let words = option(value, lang).unwrap_or_else(|| panic!("no {lang:?} words for `{value}`"));
                        assert!(!words.trim().is_empty(), "`{value}` {lang:?}: empty words");
                        assert!(!words.contains('_'), "`{value}` {lang:?}: {words:?} reads as a code");
                    }
                    values += 1;
                }
            }
        }
        assert!(values > 0, "the walk reaches the enumerations");
        assert_eq!(option("in_stock", Lang::Fr), Some("En stock"));
        assert_eq!(option("18_plus", Lang::En), Some("18 and over"));
        assert_eq!(option("18_plus", Lang::Fr), Some("18 ans et plus"));
        assert_eq!(option("no_such_value", Lang::En), None);
    }

    #[test]
    fn no_words_for_a_member_or_value_no_table_has() {
        let fields = fields();
        for (name, _) in MEMBERS {
            assert!(fields.iter().any(|f| f.name == *name), "`{name}` is in no field table");
        }
        for (value, _) in OPTIONS {
            let used = fields.iter().any(|f| match f.form {
                Form::Enum(allowed) | Form::EnumSet(allowed) => allowed.contains(value),
                _ => false,
            });
            assert!(used, "`{value}` is in no enumeration");
        }
    }

    #[test]
    fn tables_are_sorted_for_binary_search() {
        for pair in MEMBERS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "`{}` must come after `{}`", pair[0].0, pair[1].0);
        }
        for pair in OPTIONS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "`{}` must come after `{}`", pair[0].0, pair[1].0);
        }
    }

    /// The editor's inputs are one question each: a short label and a hint
    /// of one line, in words a person uses, translated rather than copied.
    #[test]
    fn words_are_short_and_plain() {
        for (name, [en, fr]) in MEMBERS {
            for words in [en, fr] {
                assert!(words.label.chars().count() <= 40, "`{name}`: label {:?} is long", words.label);
                assert!(words.hint.chars().count() <= 110, "`{name}`: hint {:?} is long", words.hint);
                assert!(words.hint.ends_with('.'), "`{name}`: hint {:?} is not a sentence", words.hint);
                for jargon in ["JSON", "RFC", "ISO", "true", "false"] {
                    assert!(!words.hint.contains(jargon), "`{name}`: hint {:?} says {jargon}", words.hint);
                }
            }
            assert_ne!(en.hint, fr.hint, "`{name}`: the French hint is the English one");
        }
    }

    #[test]
    fn the_browser_language_is_the_highest_weighted_of_english_and_french() {
        let cases = [
            ("fr-FR,fr;q=0.9,en;q=0.8", Lang::Fr),
            ("en-GB,fr;q=0.5", Lang::En),
            ("de, fr;q=0.7", Lang::Fr),
            ("", Lang::En),
            (";;;q=x,,,", Lang::En),
            ("en;q=0.1, fr;q=0.2", Lang::Fr),
            ("FR-ca", Lang::Fr),
            ("fr;Q=0.9, en;q=0.8", Lang::Fr),
            ("*, fr;q=0.5", Lang::Fr),
            // Ties go to the first listed.
            ("en, fr", Lang::En),
            ("fr;q=0.5, en;q=0.500", Lang::Fr),
            // A weight of 0 is "not acceptable".
            ("fr;q=0", Lang::En),
            ("fr;q=0.000, en;q=0.001", Lang::En),
            // A malformed weight is passed over, not guessed.
            ("fr;q=1.5, en;q=0.1", Lang::En),
            ("fr;q=0.5000, en;q=0.1", Lang::En),
            ("fr;q=1e0, en;q=0.1", Lang::En),
            ("fr;q=NaN, en;q=0.1", Lang::En),
            ("fr;q=0.9;level=1, en;q=0.1", Lang::En),
            ("fr;q=, en;q=0.1", Lang::En),
            // Only the primary subtag counts, whole.
            ("frisian, english, fr-x-private;q=0.1", Lang::Fr),
            ("é,ü;q=0.5,\u{0}", Lang::En),
        ];
        for (header, expected) in cases {
            assert_eq!(Lang::from_accept_language(header), expected, "{header:?}");
        }
        let within = format!("{}fr", "de,".repeat(MAX_RANGES - 1));
        assert_eq!(Lang::from_accept_language(&within), Lang::Fr, "the last range read");
        let beyond = format!("{}fr", "de,".repeat(MAX_RANGES));
        assert_eq!(Lang::from_accept_language(&beyond), Lang::En, "a range past the limit is not read");
    }

    #[test]
    fn codes_and_yes_no() {
        assert_eq!(Lang::default(), Lang::En);
        assert_eq!((Lang::En.code(), Lang::Fr.code()), ("en", "fr"));
        assert_eq!((yes_no(true, Lang::En), yes_no(false, Lang::En)), ("Yes", "No"));
        assert_eq!((yes_no(true, Lang::Fr), yes_no(false, Lang::Fr)), ("Oui", "Non"));
    }
}
