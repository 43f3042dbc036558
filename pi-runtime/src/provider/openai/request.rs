//! Request conversion (context -> the JSON body POSTed).
